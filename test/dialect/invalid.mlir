// RUN: attn-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// attn.weight
//===----------------------------------------------------------------------===//

func.func @weight_empty_name() -> tensor<4xf32> {
  // expected-error @+1 {{'attn.weight' op needs a non-empty weight name}}
  %w = attn.weight "" : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @weight_dynamic_shape() -> tensor<?x4xf32> {
  // expected-error @+1 {{'attn.weight' op weight 'w' must have a static shape}}
  %w = attn.weight "w" : tensor<?x4xf32>
  return %w : tensor<?x4xf32>
}

// -----

func.func @weight_layout_of_a_float() -> tensor<4x4xf32> {
  // expected-error @+1 {{'attn.weight' op weight 'w' has a layout, which only a quantized matrix (i8 or ui8, rank 2) has}}
  %w = attn.weight "w" layout(in_out) : tensor<4x4xf32>
  return %w : tensor<4x4xf32>
}

// -----

func.func @weight_layout_of_a_vector() -> tensor<4xi8> {
  // expected-error @+1 {{'attn.weight' op weight 'w' has a layout, which only a quantized matrix (i8 or ui8, rank 2) has}}
  %w = attn.weight "w" layout(out_in) : tensor<4xi8>
  return %w : tensor<4xi8>
}

// -----

func.func @weight_layout_panels() -> tensor<4x4xi8> {
  // expected-error @+1 {{'attn.weight' op weight 'w' is stored out_in or in_out, not in panels}}
  %w = attn.weight "w" layout(panels) : tensor<4x4xi8>
  return %w : tensor<4x4xi8>
}

// -----

func.func @weight_not_float() -> tensor<4xi32> {
  // expected-error @+1 {{'attn.weight' op result #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float or 8-bit signless integer or 8-bit unsigned integer values}}
  %w = "attn.weight"() <{name = "w"}> : () -> tensor<4xi32>
  return %w : tensor<4xi32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.transpose
//===----------------------------------------------------------------------===//

func.func @transpose_shape(%w: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{'attn.transpose' op result shape must be the input's with dims 0 and 1 swapped}}
  %t = attn.transpose %w : tensor<16x8xf32> -> tensor<16x8xf32>
  return %t : tensor<16x8xf32>
}

// -----

func.func @transpose_rank(%w: tensor<2x16x8xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'attn.transpose' op result rank must equal the input's}}
  %t = "attn.transpose"(%w) {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<2x16x8xf32>) -> tensor<8x16xf32>
  return %t : tensor<8x16xf32>
}

// -----

func.func @transpose_same_dim(%x: tensor<?x16x8xf32>) -> tensor<?x16x8xf32> {
  // expected-error @+1 {{'attn.transpose' op needs two different dims in 0 .. 2, got 1 and 1}}
  %t = attn.transpose %x {dim0 = 1 : i64, dim1 = 1 : i64} : tensor<?x16x8xf32> -> tensor<?x16x8xf32>
  return %t : tensor<?x16x8xf32>
}

// -----

func.func @transpose_dim_out_of_range(%x: tensor<?x16x8xf32>) -> tensor<?x16x8xf32> {
  // expected-error @+1 {{'attn.transpose' op needs two different dims in 0 .. 2, got 0 and 3}}
  %t = attn.transpose %x {dim1 = 3 : i64} : tensor<?x16x8xf32> -> tensor<?x16x8xf32>
  return %t : tensor<?x16x8xf32>
}

// -----

func.func @transpose_swap_shape(%x: tensor<?x16x8xf32>) -> tensor<?x16x8xf32> {
  // expected-error @+1 {{'attn.transpose' op result shape must be the input's with dims 1 and 2 swapped}}
  %t = attn.transpose %x {dim0 = 1 : i64, dim1 = 2 : i64} : tensor<?x16x8xf32> -> tensor<?x16x8xf32>
  return %t : tensor<?x16x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.reshape
//===----------------------------------------------------------------------===//

func.func @reshape_count(%x: tensor<?x?x768xf32>) -> tensor<?x?x12x60xf32> {
  // expected-error @+1 {{'attn.reshape' op changes the element count between dynamic dims}}
  %r = attn.reshape %x : tensor<?x?x768xf32> -> tensor<?x?x12x60xf32>
  return %r : tensor<?x?x12x60xf32>
}

// -----

func.func @reshape_dynamic(%x: tensor<?x?x768xf32>) -> tensor<?x768xf32> {
  // expected-error @+1 {{'attn.reshape' op must keep the input's 2 dynamic dims, the result has 1}}
  %r = attn.reshape %x : tensor<?x?x768xf32> -> tensor<?x768xf32>
  return %r : tensor<?x768xf32>
}

// -----

func.func @reshape_move_across_dynamic(%x: tensor<?x4x?x8xf32>) -> tensor<?x2x?x16xf32> {
  // expected-error @+1 {{'attn.reshape' op changes the element count between dynamic dims}}
  %r = attn.reshape %x : tensor<?x4x?x8xf32> -> tensor<?x2x?x16xf32>
  return %r : tensor<?x2x?x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.reduce
//===----------------------------------------------------------------------===//

func.func @reduce_kind(%x: tensor<?x?x8xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'attn.reduce' op kind must be "sum" or "mean", got "max"}}
  %r = attn.reduce %x {dim = 2 : i64, kind = "max"} : tensor<?x?x8xf32> -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

func.func @reduce_dim(%x: tensor<?x?x8xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'attn.reduce' op dim 3 is out of range for rank 3}}
  %r = attn.reduce %x {dim = 3 : i64, kind = "sum"} : tensor<?x?x8xf32> -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

func.func @reduce_shape(%x: tensor<?x?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.reduce' op result must be the input's shape without dim 2}}
  %r = attn.reduce %x {dim = 2 : i64, kind = "mean"} : tensor<?x?x8xf32> -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

func.func @reduce_not_f32(%x: tensor<?x8xi32>) -> tensor<?xi32> {
  // expected-error @+1 {{'attn.reduce' op operand #0 must be ranked tensor of 32-bit float values}}
  %r = "attn.reduce"(%x) {dim = 1 : i64, kind = "sum"} : (tensor<?x8xi32>) -> tensor<?xi32>
  return %r : tensor<?xi32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.concat
//===----------------------------------------------------------------------===//

func.func @concat_no_inputs() -> tensor<4xf32> {
  // expected-error @+1 {{'attn.concat' op expected 1 or more operands, but found 0}}
  %c = "attn.concat"() <{dim = 0 : i64}> : () -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

func.func @concat_dim_too_large(%a: tensor<4x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'attn.concat' op dim 2 is out of range for rank 2}}
  %c = attn.concat %a, %a {dim = 2 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// -----

func.func @concat_dim_negative(%a: tensor<4x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'attn.concat' op dim -1 is out of range for rank 2}}
  %c = attn.concat %a, %a {dim = -1 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// -----

func.func @concat_rank_mismatch(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<5x8xf32> {
  // expected-error @+1 {{'attn.concat' op inputs must all have rank 2}}
  %c = attn.concat %a, %b {dim = 0 : i64} : tensor<4x8xf32>, tensor<8xf32> -> tensor<5x8xf32>
  return %c : tensor<5x8xf32>
}

// -----

func.func @concat_other_dim_mismatch(%a: tensor<4x8xf32>, %b: tensor<4x6xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'attn.concat' op inputs differ from the result in dim 1}}
  %c = attn.concat %a, %b {dim = 0 : i64} : tensor<4x8xf32>, tensor<4x6xf32> -> tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}

// -----

func.func @concat_sum(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>) -> tensor<12x8xf32> {
  // expected-error @+1 {{'attn.concat' op result dim 0 is 12 but the inputs add up to 10}}
  %c = attn.concat %a, %b {dim = 0 : i64} : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<12x8xf32>
  return %c : tensor<12x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.slice
//===----------------------------------------------------------------------===//

func.func @slice_dim_out_of_range(%a: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{'attn.slice' op dim 2 is out of range for rank 2}}
  %s = attn.slice %a {dim = 2 : i64, offset = 0 : i64, size = 4 : i64} : tensor<16x8xf32> -> tensor<16x8xf32>
  return %s : tensor<16x8xf32>
}

// -----

func.func @slice_negative_offset(%a: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.slice' op needs offset >= 0 and size > 0}}
  %s = attn.slice %a {dim = 0 : i64, offset = -1 : i64, size = 4 : i64} : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

func.func @slice_negative_size(%a: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.slice' op needs offset >= 0 and size > 0}}
  %s = attn.slice %a {dim = 0 : i64, offset = 8 : i64, size = -4 : i64} : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

func.func @slice_zero_size(%a: tensor<16x8xf32>) -> tensor<0x8xf32> {
  // expected-error @+1 {{'attn.slice' op needs offset >= 0 and size > 0}}
  %s = attn.slice %a {dim = 0 : i64, offset = 0 : i64, size = 0 : i64} : tensor<16x8xf32> -> tensor<0x8xf32>
  return %s : tensor<0x8xf32>
}

// -----

func.func @slice_range(%a: tensor<16x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'attn.slice' op range [12, 20) exceeds dim 0 of extent 16}}
  %s = attn.slice %a {dim = 0 : i64, offset = 12 : i64, size = 8 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

func.func @slice_result_rank(%a: tensor<16x8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'attn.slice' op result rank must equal the input's}}
  %s = attn.slice %a {dim = 0 : i64, offset = 0 : i64, size = 4 : i64} : tensor<16x8xf32> -> tensor<32xf32>
  return %s : tensor<32xf32>
}

// -----

func.func @slice_result_sliced_dim(%a: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.slice' op result dim 0 must be 8, got 4}}
  %s = attn.slice %a {dim = 0 : i64, offset = 0 : i64, size = 8 : i64} : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

func.func @slice_result_other_dim(%a: tensor<16x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'attn.slice' op result dim 1 must be 8, got 4}}
  %s = attn.slice %a {dim = 0 : i64, offset = 0 : i64, size = 4 : i64} : tensor<16x8xf32> -> tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// -----

func.func @slice_result_dynamic_dim(%a: tensor<?x?x24xf32>) -> tensor<4x?x8xf32> {
  // expected-error @+1 {{'attn.slice' op result dim 0 must be ?, got 4}}
  %s = attn.slice %a {dim = 2 : i64, offset = 8 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<4x?x8xf32>
  return %s : tensor<4x?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.scale
//===----------------------------------------------------------------------===//

func.func @scale_type(%a: tensor<16x8xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'attn.scale' op requires the same type for all operands and results}}
  %s = "attn.scale"(%a) <{factor = 2.0 : f32}> : (tensor<16x8xf32>) -> tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.embedding of a quantized table
//===----------------------------------------------------------------------===//

func.func @embedding_i8_without_scales(%ids: tensor<?xi32>, %t: tensor<50x8xi8>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.embedding' op an i8 table needs its per-row scales}}
  %e = attn.embedding %ids, %t : (tensor<?xi32>, tensor<50x8xi8>) -> tensor<?x8xf32>
  return %e : tensor<?x8xf32>
}

// -----

func.func @embedding_scales_of_f32(%ids: tensor<?xi32>, %t: tensor<50x8xf32>, %s: tensor<50xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.embedding' op scales apply only to an i8 or ui8 table, not 'f32'}}
  %e = attn.embedding %ids, %t scales %s : (tensor<?xi32>, tensor<50x8xf32>, tensor<50xf32>) -> tensor<?x8xf32>
  return %e : tensor<?x8xf32>
}

// -----

func.func @embedding_scales_per_feature(%ids: tensor<?xi32>, %t: tensor<50x8xi8>, %s: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.embedding' op scales have 8 entries, expected 50}}
  %e = attn.embedding %ids, %t scales %s : (tensor<?xi32>, tensor<50x8xi8>, tensor<8xf32>) -> tensor<?x8xf32>
  return %e : tensor<?x8xf32>
}

// -----

func.func @embedding_four_bit_groups(%ids: tensor<?xi32>, %t: tensor<50x4xui8>, %s: tensor<50x3xf32>) -> tensor<?x8xf32> {
  // Three groups do not divide a row's 8 features.
  // expected-error @+1 {{'attn.embedding' op table scales must be [out, in / G] with 50 outputs and G dividing the 8 inputs, got 'tensor<50x3xf32>'}}
  %e = attn.embedding %ids, %t scales %s : (tensor<?xi32>, tensor<50x4xui8>, tensor<50x3xf32>) -> tensor<?x8xf32>
  return %e : tensor<?x8xf32>
}

// -----

func.func @embedding_four_bit_bytes(%ids: tensor<?xi32>, %t: tensor<50x8xui8>, %s: tensor<50x1xf32>) -> tensor<?x8xf32> {
  // 8 bytes of two are 16 features.
  // expected-error @+1 {{'attn.embedding' op result must be the ids' shape with the table's 16 features}}
  %e = attn.embedding %ids, %t scales %s : (tensor<?xi32>, tensor<50x8xui8>, tensor<50x1xf32>) -> tensor<?x8xf32>
  return %e : tensor<?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.linear
//===----------------------------------------------------------------------===//

func.func @linear_i8_without_scales(%x: tensor<?x?x8xf32>, %w: tensor<16x8xi8>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.linear' op an i8 weight needs its per-output scales}}
  %y = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xi8>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_scales_of_f32(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %s: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.linear' op scales apply only to an i8 or ui8 weight, not 'f32'}}
  %y = attn.linear %x, %w scales %s layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_scales_per_input(%x: tensor<?x?x8xf32>, %w: tensor<8x16xi8>, %s: tensor<8xf32>) -> tensor<?x?x16xf32> {
  // One scale per output, whatever the layout.
  // expected-error @+1 {{'attn.linear' op scales have 8 entries, expected 16}}
  %y = attn.linear %x, %w scales %s layout(in_out) : (tensor<?x?x8xf32>, tensor<8x16xi8>, tensor<8xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_four_bit_without_scales(%x: tensor<?x?x8xf32>, %w: tensor<16x4xui8>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.linear' op weight is ui8 (4-bit) and needs its per-group scales}}
  %y = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<16x4xui8>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_four_bit_per_output_scales(%x: tensor<?x?x8xf32>, %w: tensor<16x4xui8>, %s: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.linear' op weight scales must be [out, in / G] with 16 outputs and G dividing the 8 inputs, got 'tensor<16xf32>'}}
  %y = attn.linear %x, %w scales %s layout(out_in) : (tensor<?x?x8xf32>, tensor<16x4xui8>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_four_bit_groups(%x: tensor<?x?x8xf32>, %w: tensor<16x4xui8>, %s: tensor<16x3xf32>) -> tensor<?x?x16xf32> {
  // Three groups do not divide 8 inputs.
  // expected-error @+1 {{'attn.linear' op weight scales must be [out, in / G] with 16 outputs and G dividing the 8 inputs, got 'tensor<16x3xf32>'}}
  %y = attn.linear %x, %w scales %s layout(out_in) : (tensor<?x?x8xf32>, tensor<16x4xui8>, tensor<16x3xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_four_bit_scales_in_the_other_layout(%x: tensor<?x?x8xf32>, %w: tensor<4x16xui8>, %s: tensor<16x2xf32>) -> tensor<?x?x16xf32> {
  // An [in, out] matrix's scales are [in / G, out].
  // expected-error @+1 {{'attn.linear' op weight scales must be [in / G, out] with 16 outputs and G dividing the 8 inputs, got 'tensor<16x2xf32>'}}
  %y = attn.linear %x, %w scales %s layout(in_out) : (tensor<?x?x8xf32>, tensor<4x16xui8>, tensor<16x2xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_four_bit_bytes(%x: tensor<?x?x8xf32>, %w: tensor<16x8xui8>, %s: tensor<16x1xf32>) -> tensor<?x?x16xf32> {
  // 8 inputs are 4 bytes of two.
  // expected-error @+1 {{'attn.linear' op weight expects 16 input features (layout out_in), but the input has 8}}
  %y = attn.linear %x, %w scales %s layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xui8>, tensor<16x1xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @self_attention_four_bit_shape(%x: tensor<?x?x8xf32>, %w: tensor<24x8xui8>, %s: tensor<24x1xf32>, %o: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op qkv weight must be [24, 4] ([out, in], two inputs per byte), got [24, 8]}}
  %a = attn.self_attention %x heads(2) mask<none> qkv(%w) out(%o) qkv_scales(%s) : (tensor<?x?x8xf32>, tensor<24x8xui8>, tensor<8x8xf32>, tensor<24x1xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_four_bit_scales(%x: tensor<?x?x8xf32>, %w: tensor<24x4xui8>, %s: tensor<24xf32>, %o: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op qkv weight scales must be [out, in / G] with 24 outputs and G dividing the 8 inputs, got 'tensor<24xf32>'}}
  %a = attn.self_attention %x heads(2) mask<none> qkv(%w) out(%o) qkv_scales(%s) : (tensor<?x?x8xf32>, tensor<24x4xui8>, tensor<8x8xf32>, tensor<24xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_i8_without_scales(%x: tensor<?x?x8xf32>, %w: tensor<24x8xi8>, %o: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op qkv weight is i8 and needs its per-output scales}}
  %a = attn.self_attention %x heads(2) mask<none> qkv(%w) out(%o) : (tensor<?x?x8xf32>, tensor<24x8xi8>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_scales_size(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %o: tensor<8x8xi8>, %s: tensor<24xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op out scales must have 8 entries}}
  %a = attn.self_attention %x heads(2) mask<none> q(%w) k(%w) v(%w) out(%o) out_scales(%s) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xi8>, tensor<24xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @layer_norm_i8_gamma(%x: tensor<?x?x8xf32>, %g: tensor<8xi8>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // Only attn.linear reads i8 weights (the generic form: the custom parser
  // would reject the type first).
  // expected-error @+1 {{'attn.layer_norm' op operand #1 must be 1D tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<8xi8>'}}
  %y = "attn.layer_norm"(%x, %g, %b) {epsilon = 1.0e-05 : f32} : (tensor<?x?x8xf32>, tensor<8xi8>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @linear_in_features_out_in(%x: tensor<?x?x8xf32>, %w: tensor<16x4xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.linear' op weight expects 4 input features (layout out_in), but the input has 8}}
  %y = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<16x4xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_in_features_in_out(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x?x8xf32> {
  // A [out, in] weight declared in_out.
  // expected-error @+1 {{'attn.linear' op weight expects 16 input features (layout in_out), but the input has 8}}
  %y = attn.linear %x, %w layout(in_out) : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @linear_bias_size_out_in(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.linear' op bias has 8 entries, expected 16}}
  %y = attn.linear %x, %w, %b layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_bias_size_in_out(%x: tensor<?x?x8xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.linear' op bias has 8 entries, expected 16}}
  %y = attn.linear %x, %w, %b layout(in_out) : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_result_features(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.linear' op result feature dim must be 16, got 8}}
  %y = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @linear_result_rank(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'attn.linear' op result rank 2 differs from the input's 3}}
  %y = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

func.func @linear_result_leading_dim(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) -> tensor<2x?x16xf32> {
  // expected-error @+1 {{'attn.linear' op result dim 0 (2) differs from the input's (?)}}
  %y = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<2x?x16xf32>
  return %y : tensor<2x?x16xf32>
}

// -----

func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<16x1xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'attn.linear' op input must have at least one dim}}
  %y = attn.linear %x, %w layout(out_in) : (tensor<f32>, tensor<16x1xf32>) -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

func.func @linear_weight_not_2d(%x: tensor<?x?x8xf32>, %w: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.linear' op operand #1 must be 2D/3D/4D tensor of 32-bit float or bfloat16 type or 16-bit float or 8-bit signless integer or 8-bit unsigned integer values}}
  %y = "attn.linear"(%x, %w) <{layout = #attn<layout out_in>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @linear_bias_not_1d(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<1x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.linear' op operand #2 must be 1D tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %y = "attn.linear"(%x, %w, %b) <{layout = #attn<layout out_in>, operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<1x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

func.func @linear_f16(%x: tensor<?x?x8xf16>, %w: tensor<16x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.linear' op operand #0 must be ranked tensor of 32-bit float values}}
  %y = "attn.linear"(%x, %w) <{layout = #attn<layout out_in>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<?x?x8xf16>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.layer_norm
//===----------------------------------------------------------------------===//

func.func @layer_norm_gamma_size(%x: tensor<?x?x8xf32>, %g: tensor<16xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.layer_norm' op gamma and beta must have 8 entries, the input's feature dim}}
  %n = attn.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<16xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @layer_norm_beta_size(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>, %b: tensor<4xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.layer_norm' op gamma and beta must have 8 entries, the input's feature dim}}
  %n = attn.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<4xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @layer_norm_epsilon_zero(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.layer_norm' op epsilon must be positive}}
  %n = attn.layer_norm %x, %g, %g {epsilon = 0.0 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @layer_norm_epsilon_negative(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.layer_norm' op epsilon must be positive}}
  %n = attn.layer_norm %x, %g, %g {epsilon = -1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @layer_norm_epsilon_nan(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.layer_norm' op epsilon must be positive}}
  %n = attn.layer_norm %x, %g, %g {epsilon = 0x7FC00000 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @layer_norm_result_type(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<2x?x8xf32> {
  // expected-error @+1 {{'attn.layer_norm' op result type must equal the input type}}
  %n = attn.layer_norm %x, %g, %g {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x?x8xf32>
  return %n : tensor<2x?x8xf32>
}

// -----

// A dynamic feature dim cannot be checked against gamma; the message must not
// print the dynamic-extent sentinel as a number.
func.func @layer_norm_dynamic_features(%x: tensor<?x?xf32>, %g: tensor<8xf32>) -> tensor<?x?xf32> {
  // expected-error-re @+1 {{'attn.layer_norm' op {{[^-]*$}}}}
  %n = attn.layer_norm %x, %g, %g {epsilon = 1.0e-5 : f32} : (tensor<?x?xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.rms_norm
//===----------------------------------------------------------------------===//

func.func @rms_norm_gamma_size(%x: tensor<?x?x8xf32>, %g: tensor<16xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.rms_norm' op gamma must have 8 entries, the input's feature dim}}
  %n = attn.rms_norm %x, %g {epsilon = 1.0e-6 : f32, offset = 0.0 : f32} : (tensor<?x?x8xf32>, tensor<16xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @rms_norm_epsilon_zero(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.rms_norm' op epsilon must be positive}}
  %n = attn.rms_norm %x, %g {epsilon = 0.0 : f32, offset = 0.0 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @rms_norm_offset_inf(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.rms_norm' op offset must be finite}}
  %n = attn.rms_norm %x, %g {epsilon = 1.0e-6 : f32, offset = 0x7F800000 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

func.func @rms_norm_result_type(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<2x?x8xf32> {
  // expected-error @+1 {{'attn.rms_norm' op result type must equal the input type}}
  %n = attn.rms_norm %x, %g {epsilon = 1.0e-6 : f32, offset = 0.0 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<2x?x8xf32>
  return %n : tensor<2x?x8xf32>
}

// -----

func.func @rms_norm_dynamic_features(%x: tensor<?x?xf32>, %g: tensor<8xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'attn.rms_norm' op input needs a static feature (last) dim}}
  %n = attn.rms_norm %x, %g {epsilon = 1.0e-6 : f32, offset = 0.0 : f32} : (tensor<?x?xf32>, tensor<8xf32>) -> tensor<?x?xf32>
  return %n : tensor<?x?xf32>
}

// -----

func.func @rms_norm_scalar_input(%x: tensor<f32>, %g: tensor<8xf32>) -> tensor<f32> {
  // expected-error @+1 {{'attn.rms_norm' op input needs a static feature (last) dim}}
  %n = attn.rms_norm %x, %g {epsilon = 1.0e-6 : f32, offset = 0.0 : f32} : (tensor<f32>, tensor<8xf32>) -> tensor<f32>
  return %n : tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.interleave, attn.glu
//===----------------------------------------------------------------------===//

func.func @interleave_types(%a: tensor<4x8xf32>, %b: tensor<4x4xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'attn.interleave' op inputs must all have one type}}
  %w = attn.interleave %a, %b {dim = 0 : i64} : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<8x8xf32>
  return %w : tensor<8x8xf32>
}

// -----

func.func @interleave_result(%a: tensor<4x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'attn.interleave' op result type must be 'tensor<8x8xf32>'}}
  %w = attn.interleave %a, %a {dim = 0 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
  return %w : tensor<4x16xf32>
}

// -----

func.func @interleave_dim(%a: tensor<4x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'attn.interleave' op dim 2 is out of range for rank 2}}
  %w = attn.interleave %a, %a {dim = 2 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  return %w : tensor<8x8xf32>
}

// -----

func.func @glu_odd(%x: tensor<?x7xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'attn.glu' op input needs an even static feature (last) dim}}
  %m = attn.glu %x {activation = "silu"} : tensor<?x7xf32> -> tensor<?x3xf32>
  return %m : tensor<?x3xf32>
}

// -----

func.func @glu_result(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.glu' op result must have half the input's features}}
  %m = attn.glu %x {activation = "silu"} : tensor<?x8xf32> -> tensor<?x8xf32>
  return %m : tensor<?x8xf32>
}

// -----

func.func @glu_softmax(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'attn.glu' op activation 'softmax' is not an elementwise function of one tensor}}
  %m = attn.glu %x {activation = "softmax"} : tensor<?x8xf32> -> tensor<?x4xf32>
  return %m : tensor<?x4xf32>
}

// -----

func.func @glu_unknown(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'attn.glu' op activation 'swish' is not an elementwise function of one tensor}}
  %m = attn.glu %x {activation = "swish"} : tensor<?x8xf32> -> tensor<?x4xf32>
  return %m : tensor<?x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.softcap
//===----------------------------------------------------------------------===//

func.func @softcap_zero(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.softcap' op cap must be positive and finite}}
  %c = attn.softcap %x {cap = 0.0 : f32} : tensor<?x?x8xf32>
  return %c : tensor<?x?x8xf32>
}

// -----

func.func @softcap_negative(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.softcap' op cap must be positive and finite}}
  %c = attn.softcap %x {cap = -30.0 : f32} : tensor<?x?x8xf32>
  return %c : tensor<?x?x8xf32>
}

// -----

func.func @softcap_inf(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.softcap' op cap must be positive and finite}}
  %c = attn.softcap %x {cap = 0x7F800000 : f32} : tensor<?x?x8xf32>
  return %c : tensor<?x?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.self_attention
//===----------------------------------------------------------------------===//

func.func @self_attention_heads_divide(%x: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %wo: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op d_model 8 is not divisible by heads = 3}}
  %a = attn.self_attention %x heads(3) mask<none> qkv(%w) out(%wo) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_heads_zero(%x: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %wo: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op attribute 'heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %a = attn.self_attention %x heads(0) mask<none> qkv(%w) out(%wo) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_dynamic_features(%x: tensor<?x?x?xf32>, %w: tensor<24x8xf32>, %wo: tensor<8x8xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'attn.self_attention' op the feature dim must be static}}
  %a = attn.self_attention %x heads(2) mask<none> qkv(%w) out(%wo) : (tensor<?x?x?xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<?x?x?xf32>
  return %a : tensor<?x?x?xf32>
}

// -----

func.func @self_attention_rank1(%x: tensor<8xf32>, %w: tensor<24x8xf32>, %wo: tensor<8x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'attn.self_attention' op input must be at least [S, D]}}
  %a = attn.self_attention %x heads(2) mask<none> qkv(%w) out(%wo) : (tensor<8xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

func.func @self_attention_qkv_and_q(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %w: tensor<24x8xf32>, %wo: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op needs either q, k and v projections or one packed qkv projection}}
  %a = attn.self_attention %x heads(2) mask<none> q(%wq) k(%wq) v(%wq) qkv(%w) out(%wo) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_no_projection(%x: tensor<?x?x8xf32>, %wo: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op needs either q, k and v projections or one packed qkv projection}}
  %a = attn.self_attention %x heads(2) mask<none> out(%wo) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_partial(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %wo: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op needs all three of q, k and v projections}}
  %a = attn.self_attention %x heads(2) mask<none> q(%wq) k(%wq) out(%wo) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_k_shape(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %wk: tensor<8x4xf32>, %wo: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op k weight must be [8, 8] ([out, in]), got [8, 4]}}
  %a = attn.self_attention %x heads(2) mask<none> q(%wq) k(%wk) v(%wq) out(%wo) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x4xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_v_bias(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %bv: tensor<4xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op v bias must have 8 entries}}
  %a = attn.self_attention %x heads(2) mask<none> q(%w) k(%w) v(%w, %bv) out(%w) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<4xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// The packed weight is [3D, D] ([out, in]); GPT-2 stores it [D, 3D].
func.func @self_attention_qkv_shape(%x: tensor<?x?x8xf32>, %w: tensor<8x24xf32>, %wo: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op qkv weight must be [24, 8] ([out, in]), got [8, 24]}}
  %a = attn.self_attention %x heads(2) mask<causal> qkv(%w) out(%wo) : (tensor<?x?x8xf32>, tensor<8x24xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_qkv_bias(%x: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %b: tensor<8xf32>, %wo: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op qkv bias must have 24 entries}}
  %a = attn.self_attention %x heads(2) mask<causal> qkv(%w, %b) out(%wo) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_out_shape(%x: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %wo: tensor<16x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op out weight must be [8, 8] ([out, in]), got [16, 8]}}
  %a = attn.self_attention %x heads(2) mask<none> qkv(%w) out(%wo) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_out_bias(%x: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %wo: tensor<8x8xf32>, %bo: tensor<24xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op out bias must have 8 entries}}
  %a = attn.self_attention %x heads(2) mask<none> qkv(%w) out(%wo, %bo) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>, tensor<24xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_result_type(%x: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %wo: tensor<8x8xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op result type must equal the input type}}
  %a = attn.self_attention %x heads(2) mask<none> qkv(%w) out(%wo) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<?x4x8xf32>
  return %a : tensor<?x4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.sdpa
//===----------------------------------------------------------------------===//

func.func @sdpa_key_type(%q: tensor<?x?x8xf32>, %k: tensor<?x?x16xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op keys have 16 features; kv_heads = 2 heads of 4 need 8}}
  %o = attn.sdpa %q, %k, %q heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @sdpa_result_type(%q: tensor<?x?x8xf32>) -> tensor<2x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op result must be the query's shape with 8 features (heads x value head dim)}}
  %o = attn.sdpa %q, %q, %q heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<2x?x8xf32>
  return %o : tensor<2x?x8xf32>
}

// -----

func.func @sdpa_heads(%q: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op feature dim 8 is not divisible by heads = 3}}
  %o = attn.sdpa %q, %q, %q heads(3) mask<causal> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @sdpa_dynamic_features(%q: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'attn.sdpa' op feature dims must be static}}
  %o = attn.sdpa %q, %q, %q heads(2) mask<causal> {scale = 0.5 : f32} : tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?x?xf32>
  return %o : tensor<?x?x?xf32>
}

// -----

func.func @sdpa_rank1(%q: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'attn.sdpa' op query must be at least [S, D]}}
  %o = attn.sdpa %q, %q, %q heads(2) mask<none> {scale = 0.5 : f32} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %o : tensor<8xf32>
}

// -----

func.func @sdpa_heads_zero(%q: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op attribute 'heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %o = attn.sdpa %q, %q, %q heads(0) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.kernel and attn.yield
//===----------------------------------------------------------------------===//

func.func @kernel_arg_count(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.kernel' op body has 1 arguments for 2 inputs}}
  %y = attn.kernel @k0(%x, %w) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: tensor<?x8xf32>):
    attn.yield %a : tensor<?x8xf32>
  }
  return %y : tensor<?x8xf32>
}

// -----

func.func @kernel_arg_types(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.kernel' op body argument types must match the inputs}}
  %y = attn.kernel @k0(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %g = attn.gelu %a : tensor<4x8xf32>
    attn.yield %x : tensor<?x8xf32>
  }
  return %y : tensor<?x8xf32>
}

// -----

func.func @kernel_yield_types(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.kernel' op yielded types must match the results}}
  %y = attn.kernel @k0(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: tensor<?x8xf32>):
    attn.yield %a, %a : tensor<?x8xf32>, tensor<?x8xf32>
  }
  return %y : tensor<?x8xf32>
}

// -----

func.func @kernel_missing_yield(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.kernel' op yielded types must match the results}}
  %y = attn.kernel @k0(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: tensor<?x8xf32>):
  }
  return %y : tensor<?x8xf32>
}

// -----

func.func @kernel_isolated(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %y = attn.kernel @k0(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: tensor<?x8xf32>):
    // expected-error @+1 {{'attn.gelu' op using value defined outside the region}}
    %g = attn.gelu %x : tensor<?x8xf32>
    attn.yield %g : tensor<?x8xf32>
  }
  return %y : tensor<?x8xf32>
}

// -----

func.func @yield_outside_kernel(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'attn.yield' op expects parent op 'attn.kernel'}}
  attn.yield %x : tensor<?x8xf32>
}

// -----

func.func @pack_panels_width_not_positive(%w: tensor<8x24xf32>) {
  // expected-error @+1 {{'attn.pack_panels' op width 0 must be positive}}
  %p = attn.pack_panels %w {width = 0 : i64} : tensor<8x24xf32> -> tensor<1x8x16xf32>
  return
}

// -----

func.func @pack_panels_padded_count(%w: tensor<8x24xf32>) {
  // expected-error @+1 {{'attn.pack_panels' op result must be [ceil(out / width), in, width] = [2, 8, 16]}}
  %p = attn.pack_panels %w {width = 16 : i64} : tensor<8x24xf32> -> tensor<1x8x16xf32>
  return
}

// -----

func.func @linear_panels_count(%x: tensor<?x8xf32>, %p: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'attn.linear' op weight has 2 panels of 16 outputs, but the result has 40 features}}
  %y = attn.linear %x, %p layout(panels) : (tensor<?x8xf32>, tensor<2x8x16xf32>) -> tensor<?x40xf32>
  return
}

// -----

func.func @pack_panels_bad_shape(%w: tensor<8x32xf32>) {
  // expected-error @+1 {{'attn.pack_panels' op result must be [ceil(out / width), in, width] = [2, 8, 16]}}
  %p = attn.pack_panels %w {width = 16 : i64} : tensor<8x32xf32> -> tensor<2x16x8xf32>
  return
}

// -----

func.func @pack_pairs_from_i8(%w: tensor<8x32xi8>) {
  // expected-error @+1 {{'attn.pack_panels' op bf16 pairs of inputs (a rank-4 result) are bf16, packed from f32 or bf16}}
  %p = attn.pack_panels %w {width = 16 : i64} : tensor<8x32xi8> -> tensor<2x4x16x2xbf16>
  return
}

// -----

func.func @pack_pairs_bad_shape(%w: tensor<8x32xf32>) {
  // expected-error @+1 {{'attn.pack_panels' op bf16 pairs must be [ceil(out / width), in / 2, width, 2] = [2, 4, 16, 2] of an even number of inputs}}
  %p = attn.pack_panels %w {width = 16 : i64} : tensor<8x32xf32> -> tensor<2x8x16x2xbf16>
  return
}

// -----

func.func @pack_quads_from_f32(%w: tensor<8x32xf32>) {
  // expected-error @+1 {{'attn.pack_panels' op quads of bytes (a rank-4 'i8' result) are packed from 'i8', not 'f32'}}
  %p = attn.pack_panels %w {width = 16 : i64} : tensor<8x32xf32> -> tensor<2x2x16x4xi8>
  return
}

// -----

func.func @pack_quads_bad_shape(%w: tensor<6x32xi8>) {
  // expected-error @+1 {{'attn.pack_panels' op quads of bytes must be [ceil(out / width), in / 4, width, 4] = [2, 1, 16, 4] of a multiple of 4 bytes}}
  %p = attn.pack_panels %w {width = 16 : i64} : tensor<6x32xi8> -> tensor<2x1x16x4xi8>
  return
}

// -----

func.func @pack_panels_converts(%w: tensor<8x32xf32>) {
  // expected-error @+1 {{'attn.pack_panels' op panels keep the element type}}
  %p = attn.pack_panels %w {width = 16 : i64} : tensor<8x32xf32> -> tensor<2x8x16xbf16>
  return
}

// -----

func.func @linear_pairs_not_bf16(%x: tensor<?x8xf32>, %p: tensor<2x4x16x2xf32>) {
  // expected-error @+1 {{'attn.linear' op a rank-4 panels weight is bf16 pairs of inputs}}
  %y = attn.linear %x, %p layout(panels) : (tensor<?x8xf32>, tensor<2x4x16x2xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_pairs_of_ui8(%x: tensor<?x16xf32>, %p: tensor<2x4x16x2xui8>, %s: tensor<1x32xf32>) {
  // expected-error @+1 {{'attn.linear' op a rank-4 panels weight is bf16 pairs of inputs, [panels, in / 2, width, 2] of bf16, or quads of bytes, [panels, in / 4, width, 4] of i8 or [panels, in / 8, width, 4] of ui8 (4-bit)}}
  %y = attn.linear %x, %p scales %s layout(panels) : (tensor<?x16xf32>, tensor<2x4x16x2xui8>, tensor<1x32xf32>) -> tensor<?x32xf32>
  return
}

// -----

// A 4-bit matrix in quads takes its group scales packed as its bytes:
// [panels, in / G, width], not [in / G, out].
func.func @linear_quads_of_ui8_scales(%x: tensor<?x64xf32>, %p: tensor<2x8x16x4xui8>, %s: tensor<2x32xf32>) {
  // expected-error @+1 {{'attn.linear' op a 4-bit weight in quads needs its group scales packed as its bytes, [2, in / G, 16] with G dividing the 64 inputs, got 'tensor<2x32xf32>'}}
  %y = attn.linear %x, %p scales %s layout(panels) : (tensor<?x64xf32>, tensor<2x8x16x4xui8>, tensor<2x32xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_quads_of_ui8_scale_panels(%x: tensor<?x64xf32>, %p: tensor<2x8x16x4xui8>, %s: tensor<3x2x16xf32>) {
  // expected-error @+1 {{'attn.linear' op a 4-bit weight in quads needs its group scales packed as its bytes, [2, in / G, 16] with G dividing the 64 inputs, got 'tensor<3x2x16xf32>'}}
  %y = attn.linear %x, %p scales %s layout(panels) : (tensor<?x64xf32>, tensor<2x8x16x4xui8>, tensor<3x2x16xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_quads_of_ui8_scale_groups(%x: tensor<?x64xf32>, %p: tensor<2x8x16x4xui8>, %s: tensor<2x3x16xf32>) {
  // expected-error @+1 {{'attn.linear' op a 4-bit weight in quads needs its group scales packed as its bytes, [2, in / G, 16] with G dividing the 64 inputs, got 'tensor<2x3x16xf32>'}}
  %y = attn.linear %x, %p scales %s layout(panels) : (tensor<?x64xf32>, tensor<2x8x16x4xui8>, tensor<2x3x16xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_quads_of_ui8_no_scales(%x: tensor<?x64xf32>, %p: tensor<2x8x16x4xui8>) {
  // expected-error @+1 {{'attn.linear' op a 4-bit weight in quads needs its group scales packed as its bytes, [2, in / G, 16] with G dividing the 64 inputs, got none}}
  %y = attn.linear %x, %p layout(panels) : (tensor<?x64xf32>, tensor<2x8x16x4xui8>) -> tensor<?x32xf32>
  return
}

// -----

// An i8 matrix in quads keeps its per-output scales.
func.func @linear_quads_of_i8_scales(%x: tensor<?x64xf32>, %p: tensor<2x16x16x4xi8>, %s: tensor<2x16xf32>) {
  // expected-error @+1 {{'attn.linear' op scales have 2 entries, expected 32}}
  %y = attn.linear %x, %p scales %s layout(panels) : (tensor<?x64xf32>, tensor<2x16x16x4xi8>, tensor<2x16xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_panels_needs_rank3(%x: tensor<?x8xf32>, %w: tensor<8x32xf32>) {
  // expected-error @+1 {{'attn.linear' op layout panels needs a rank-3 weight}}
  %y = attn.linear %x, %w layout(panels) : (tensor<?x8xf32>, tensor<8x32xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @linear_in_out_rank3(%x: tensor<?x8xf32>, %w: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'attn.linear' op layout in_out needs a rank-2 weight}}
  %y = attn.linear %x, %w layout(in_out) : (tensor<?x8xf32>, tensor<2x8x16xf32>) -> tensor<?x32xf32>
  return
}

// -----

// Kept last: today this crashes the verifier (LayerNormOp::verify reads dim -1).
// A rank-0 input has no feature dim: an error, not a crash.
func.func @layer_norm_scalar_input(%x: tensor<f32>, %g: tensor<8xf32>) -> tensor<f32> {
  // expected-error-re @+1 {{'attn.layer_norm' op {{.*}}}}
  %n = attn.layer_norm %x, %g, %g {epsilon = 1.0e-5 : f32} : (tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  return %n : tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// Binary ops (add, sub, mul)
//===----------------------------------------------------------------------===//

func.func @binary_not_broadcastable(%x: tensor<?x?x8xf32>, %y: tensor<?x4xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.mul' op operands do not broadcast: dim 1 of 'tensor<?x4xf32>' differs from dim 2 of 'tensor<?x?x8xf32>'}}
  %m = attn.mul %x, %y : tensor<?x?x8xf32>, tensor<?x4xf32> -> tensor<?x?x8xf32>
  return %m : tensor<?x?x8xf32>
}

// -----

func.func @binary_result_not_longer(%x: tensor<?x?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.sub' op result type 'tensor<?x8xf32>' must be the longer operand's type 'tensor<?x?x8xf32>'}}
  %d = attn.sub %x, %y : tensor<?x?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %d : tensor<?x8xf32>
}

// -----

func.func @sdpa_kv_heads(%q: tensor<?x?x8xf32>, %k: tensor<?x?x4xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op kv_heads = 3 does not divide heads = 4}}
  %o = attn.sdpa %q, %k, %k heads(4) mask<none> {kv_heads = 3 : i64, scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @sdpa_key_value_lengths(%q: tensor<?x?x8xf32>, %k: tensor<?x5x8xf32>, %v: tensor<?x6x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op keys and values differ in length}}
  %o = attn.sdpa %q, %k, %v heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x5x8xf32>, tensor<?x6x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @sdpa_lengths_batch(%q: tensor<3x?x8xf32>, %len: tensor<2xi32>) -> tensor<3x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op key lengths have 2 entries for a batch of 3}}
  %o = attn.sdpa %q, %q, %q heads(2) mask<none> lengths(%len : tensor<2xi32>) {scale = 0.5 : f32} : tensor<3x?x8xf32>, tensor<3x?x8xf32>, tensor<3x?x8xf32> -> tensor<3x?x8xf32>
  return %o : tensor<3x?x8xf32>
}

// -----

func.func @sdpa_bias_shape(%q: tensor<?x?x8xf32>, %b: tensor<?x3x?x?xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op bias 'tensor<?x3x?x?xf32>' does not fit [B, 2, Sq, Sk]}}
  %o = attn.sdpa %q, %q, %q heads(2) mask<none> bias(%b : tensor<?x3x?x?xf32>) {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @sdpa_weights_shape(%q: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op weights must be [batch..., 2, Sq, Sk]}}
  %o, %w = attn.sdpa %q, %q, %q heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>, tensor<?x?x?xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @sdpa_score_vector(%q: tensor<?x?x8xf32>, %s: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op the additive score vector must be [4] or [1, 4] (the head dim)}}
  %o = attn.sdpa %q, %q, %q heads(2) mask<none> score(%s : tensor<8xf32>) {scale = 1.0 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @mask_unknown_term(%q: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{unknown mask term 'casual'; the terms are none, causal, window(L, R), offset(N)}}
  %o = attn.sdpa %q, %q, %q heads(2) mask<casual> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @mask_window_side(%q: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{window sides must be >= 0, or -1 for unbounded}}
  %o = attn.sdpa %q, %q, %q heads(2) mask<window(-3, 0)> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @softmax_dynamic_last_dim(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'attn.softmax' op input needs a static last dim}}
  %p = attn.softmax %x : tensor<?x?xf32>
  return %p : tensor<?x?xf32>
}

// -----

func.func @embedding_features(%ids: tensor<?x?xi32>, %wte: tensor<50x8xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{'attn.embedding' op result must be the ids' shape with the table's 8 features}}
  %e = attn.embedding %ids, %wte : (tensor<?x?xi32>, tensor<50x8xf32>) -> tensor<?x?x4xf32>
  return %e : tensor<?x?x4xf32>
}

// -----

func.func @positions_dim(%ids: tensor<?x?xi32>) -> tensor<?xi32> {
  // expected-error @+1 {{'attn.positions' op dim 2 is outside the input's rank 2}}
  %p = attn.positions %ids {dim = 2 : i64} : (tensor<?x?xi32>) -> tensor<?xi32>
  return %p : tensor<?xi32>
}

// -----

func.func @positions_start(%ids: tensor<?x?xi32>) -> tensor<?xi32> {
  // expected-error @+1 {{'attn.positions' op start -1 is not an i32 position}}
  %p = attn.positions %ids {dim = 1 : i64, start = -1 : i64} : (tensor<?x?xi32>) -> tensor<?xi32>
  return %p : tensor<?xi32>
}

// -----

func.func @positions_extent(%ids: tensor<?x7xi32>) -> tensor<?xi32> {
  // expected-error @+1 {{'attn.positions' op result must have the extent of input dim 1}}
  %p = attn.positions %ids {dim = 1 : i64} : (tensor<?x7xi32>) -> tensor<?xi32>
  return %p : tensor<?xi32>
}

// -----

func.func @positions_batch_extents(%ids: tensor<3x7xi32>) -> tensor<2x7xi32> {
  // expected-error @+1 {{'attn.positions' op result must have the extents of input dims 0 .. 1}}
  %p = attn.positions %ids {dim = 1 : i64} : (tensor<3x7xi32>) -> tensor<2x7xi32>
  return %p : tensor<2x7xi32>
}

// -----

func.func @positions_offset_per_sequence(%ids: tensor<?x?xi32>, %pos: tensor<?xi32>) -> tensor<?xi32> {
  // expected-error @+1 {{'attn.positions' op an offset per sequence needs the [B, n] result, the input's dims 0 .. 1}}
  %p = attn.positions %ids offset(%pos) {dim = 1 : i64} : (tensor<?x?xi32>, tensor<?xi32>) -> tensor<?xi32>
  return %p : tensor<?xi32>
}

// -----

func.func @positions_offset_batch(%ids: tensor<2x?xi32>, %pos: tensor<3xi32>) -> tensor<2x?xi32> {
  // expected-error @+1 {{'attn.positions' op the offset must have one entry per sequence}}
  %p = attn.positions %ids offset(%pos) {dim = 1 : i64} : (tensor<2x?xi32>, tensor<3xi32>) -> tensor<2x?xi32>
  return %p : tensor<2x?xi32>
}

// -----

func.func @sinusoidal_odd(%p: tensor<?xi32>) -> tensor<?x7xf32> {
  // expected-error @+1 {{'attn.sinusoidal' op the feature dim must be a static even size, got 7}}
  %pe = attn.sinusoidal %p : (tensor<?xi32>) -> tensor<?x7xf32>
  return %pe : tensor<?x7xf32>
}

// -----

func.func @sinusoidal_shape(%p: tensor<?x?xi32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.sinusoidal' op result must be the positions' shape with one more (feature) dim}}
  %pe = attn.sinusoidal %p : (tensor<?x?xi32>) -> tensor<?x8xf32>
  return %pe : tensor<?x8xf32>
}

// -----

func.func @relative_bias_odd_pairs(%x: tensor<?x?x8xf32>, %t: tensor<7x2xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'attn.relative_bias' op bidirectional buckets come in pairs, got 7}}
  %b = attn.relative_bias %x, %t bidirectional {max_distance = 16 : i64} : (tensor<?x?x8xf32>, tensor<7x2xf32>) -> tensor<?x2x?x?xf32>
  return %b : tensor<?x2x?x?xf32>
}

// -----

func.func @relative_bias_short_distance(%x: tensor<?x?x8xf32>, %t: tensor<32x2xf32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'attn.relative_bias' op max_distance 8 must exceed the 8 distances held exactly}}
  %b = attn.relative_bias %x, %t bidirectional {max_distance = 8 : i64} : (tensor<?x?x8xf32>, tensor<32x2xf32>) -> tensor<?x2x?x?xf32>
  return %b : tensor<?x2x?x?xf32>
}

// -----

func.func @relative_bias_heads(%x: tensor<?x?x8xf32>, %t: tensor<32x2xf32>) -> tensor<?x4x?x?xf32> {
  // expected-error @+1 {{'attn.relative_bias' op result must be [B, heads, S, S] of the input's B and S and the table's 2 heads}}
  %b = attn.relative_bias %x, %t {max_distance = 128 : i64} : (tensor<?x?x8xf32>, tensor<32x2xf32>) -> tensor<?x4x?x?xf32>
  return %b : tensor<?x4x?x?xf32>
}

// -----

func.func @relative_bias_offsets_alone(%x: tensor<?x?x8xf32>, %t: tensor<32x2xf32>, %pos: tensor<?xi32>) -> tensor<?x2x?x?xf32> {
  // expected-error @+1 {{'attn.relative_bias' op takes query offsets and a key cache together, or neither}}
  %b = attn.relative_bias %x, %t query_offsets(%pos) {max_distance = 128 : i64} : (tensor<?x?x8xf32>, tensor<32x2xf32>, tensor<?xi32>) -> tensor<?x2x?x?xf32>
  return %b : tensor<?x2x?x?xf32>
}

// -----

func.func @relative_bias_cache_rows(%x: tensor<?x?x8xf32>, %t: tensor<32x2xf32>, %pos: tensor<?xi32>, %cache: tensor<?x16x8xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'attn.relative_bias' op result must be [B, heads, S, S] of the input's B and S and the table's 2 heads ([B, heads, S, L] over a key cache)}}
  %b = attn.relative_bias %x, %t query_offsets(%pos) keys(%cache) {max_distance = 128 : i64} : (tensor<?x?x8xf32>, tensor<32x2xf32>, tensor<?xi32>, tensor<?x16x8xf32>) -> tensor<?x2x?x8xf32>
  return %b : tensor<?x2x?x8xf32>
}

// -----

// A decode's bias runs over the cache's 16 rows, not the queries' S.
func.func @self_attention_decode_bias(%x: tensor<?x?x8xf32>, %qkv: tensor<24x8xf32>, %o: tensor<8x8xf32>, %b: tensor<?x2x?x8xf32>, %kc: tensor<?x16x8xf32>, %vc: tensor<?x16x8xf32>, %pos: tensor<?xi32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op bias 'tensor<?x2x?x8xf32>' does not fit [B, 2, Sq, Sk] of query 'tensor<?x?x8xf32>' and key 'tensor<?x16x8xf32>'}}
  %a = attn.self_attention %x heads(2) mask<causal> qkv(%qkv) out(%o) bias(%b) key_cache(%kc) value_cache(%vc) position(%pos) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>, tensor<?x2x?x8xf32>, tensor<?x16x8xf32>, tensor<?x16x8xf32>, tensor<?xi32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// A KV cache is f32, f16, bf16 or i8 (the generic form: the type constraint).
func.func @cache_write_i32(%c: tensor<?x?x8xi32>, %k: tensor<?x?x8xf32>) -> tensor<?x?x8xi32> {
  // expected-error @+1 {{'attn.cache_write' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float or 8-bit signless integer values, but got 'tensor<?x?x8xi32>'}}
  %r = "attn.cache_write"(%c, %k) : (tensor<?x?x8xi32>, tensor<?x?x8xf32>) -> tensor<?x?x8xi32>
  return %r : tensor<?x?x8xi32>
}

// -----

// An i8 cache is quantized per group of features: it needs 'groups'.
func.func @cache_write_i8_groups(%c: tensor<?x?x8xi8>, %k: tensor<?x?x8xf32>) -> tensor<?x?x8xi8> {
  // expected-error @+1 {{'attn.cache_write' op an i8 cache and its scales need 'groups'}}
  %r = attn.cache_write %c, %k : (tensor<?x?x8xi8>, tensor<?x?x8xf32>) -> tensor<?x?x8xi8>
  return %r : tensor<?x?x8xi8>
}

// -----

func.func @cache_write_i8_odd_groups(%c: tensor<?x?x8xi8>, %k: tensor<?x?x8xf32>) -> tensor<?x?x8xi8> {
  // expected-error @+1 {{'attn.cache_write' op 'groups' = 3 must divide the rows' 8 features}}
  %r = attn.cache_write %c, %k {groups = 3 : i64} : (tensor<?x?x8xi8>, tensor<?x?x8xf32>) -> tensor<?x?x8xi8>
  return %r : tensor<?x?x8xi8>
}

// -----

func.func @cache_write_f32_groups(%c: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.cache_write' op 'groups' is for an i8 cache and its scales}}
  %r = attn.cache_write %c, %k {groups = 2 : i64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// -----

// The scales' state has one scale per group of each row.
func.func @cache_write_scales(%c: tensor<?x?x4xf32>, %k: tensor<?x?x8xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{'attn.cache_write' op the scales of an i8 cache must be f32 with 2 ('groups') scales a row, got 'tensor<?x?x4xf32>'}}
  %r = attn.cache_write %c, %k {groups = 2 : i64, scales} : (tensor<?x?x4xf32>, tensor<?x?x8xf32>) -> tensor<?x?x4xf32>
  return %r : tensor<?x?x4xf32>
}

// -----

// An i8 cache's attention needs the scales of its keys and values.
func.func @sdpa_i8_without_scales(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xi8>, %pos: tensor<?xi32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op an i8 KV cache needs its key_scale}}
  %o = attn.sdpa %q, %k, %k heads(2) mask<causal> query_offsets(%pos : tensor<?xi32>) {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xi8>, tensor<?x?x8xi8> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @sdpa_i8_scales_per_row(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xi8>, %s: tensor<?x?x1xf32>, %pos: tensor<?xi32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op key_scale must be f32 with the cache's batch and row dims and 2 scales a row (one per key/value head), got 'tensor<?x?x1xf32>'}}
  %o = attn.sdpa %q, %k, %k heads(2) mask<causal> query_offsets(%pos : tensor<?xi32>) key_scale(%s : tensor<?x?x1xf32>) value_scale(%s : tensor<?x?x1xf32>) {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xi8>, tensor<?x?x8xi8> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @sdpa_scales_without_i8(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %s: tensor<?x?x2xf32>, %pos: tensor<?xi32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.sdpa' op key and value scales are for i8 keys and values}}
  %o = attn.sdpa %q, %k, %k heads(2) mask<causal> query_offsets(%pos : tensor<?xi32>) key_scale(%s : tensor<?x?x2xf32>) value_scale(%s : tensor<?x?x2xf32>) {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

func.func @self_attention_i8_without_scales(%x: tensor<?x?x8xf32>, %qkv: tensor<24x8xf32>, %o: tensor<8x8xf32>, %kc: tensor<?x?x8xi8>, %vc: tensor<?x?x8xi8>, %pos: tensor<?xi32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.self_attention' op an i8 KV cache needs its key_cache_scale}}
  %a = attn.self_attention %x heads(2) mask<causal> qkv(%qkv) out(%o) key_cache(%kc) value_cache(%vc) position(%pos) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>, tensor<?x?x8xi8>, tensor<?x?x8xi8>, tensor<?xi32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// The rows written are f32: the cache write rounds them.
func.func @cache_write_half_rows(%c: tensor<?x?x8xf16>, %k: tensor<?x?x8xf16>) -> tensor<?x?x8xf16> {
  // expected-error @+1 {{'attn.cache_write' op operand #1 must be ranked tensor of 32-bit float values, but got 'tensor<?x?x8xf16>'}}
  %r = "attn.cache_write"(%c, %k) : (tensor<?x?x8xf16>, tensor<?x?x8xf16>) -> tensor<?x?x8xf16>
  return %r : tensor<?x?x8xf16>
}
