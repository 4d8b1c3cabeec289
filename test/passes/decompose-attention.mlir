// RUN: attn-opt %s -split-input-file -attn-decompose-attention | FileCheck %s

// Separate projections with biases: d_model 8, 2 heads -> scale 1/sqrt(4).
// CHECK-LABEL: func.func @separate_with_biases
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[WQ:[^:]*]]: tensor<8x8xf32>, %[[BQ:[^:]*]]: tensor<8xf32>, %[[WK:[^:]*]]: tensor<8x8xf32>, %[[BK:[^:]*]]: tensor<8xf32>, %[[WV:[^:]*]]: tensor<8x8xf32>, %[[BV:[^:]*]]: tensor<8xf32>, %[[WO:[^:]*]]: tensor<8x8xf32>, %[[BO:[^:]*]]: tensor<8xf32>)
// CHECK-NEXT: %[[Q:.*]] = attn.linear %[[X]], %[[WQ]], %[[BQ]] layout({{ ?}}out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT: %[[K:.*]] = attn.linear %[[X]], %[[WK]], %[[BK]] layout({{ ?}}out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT: %[[V:.*]] = attn.linear %[[X]], %[[WV]], %[[BV]] layout({{ ?}}out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(2) mask<none> {scale = 5.000000e-01 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[O]], %[[WO]], %[[BO]] layout({{ ?}}out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT: return %[[Y]] : tensor<?x?x8xf32>
// CHECK-NOT: attn.self_attention
func.func @separate_with_biases(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %bq: tensor<8xf32>,
                                %wk: tensor<8x8xf32>, %bk: tensor<8xf32>, %wv: tensor<8x8xf32>, %bv: tensor<8xf32>,
                                %wo: tensor<8x8xf32>, %bo: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %a = attn.self_attention %x heads(2) mask<none> q(%wq, %bq) k(%wk, %bk) v(%wv, %bv) out(%wo, %bo)
      : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// No biases, one head of 16 features -> scale 1/4; the mask is carried over.
// CHECK-LABEL: func.func @separate_without_biases
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x16xf32>, %[[WQ:[^:]*]]: tensor<16x16xf32>, %[[WK:[^:]*]]: tensor<16x16xf32>, %[[WV:[^:]*]]: tensor<16x16xf32>, %[[WO:[^:]*]]: tensor<16x16xf32>)
// CHECK-NEXT: %[[Q:.*]] = attn.linear %[[X]], %[[WQ]] layout({{ ?}}out_in) : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT: %[[K:.*]] = attn.linear %[[X]], %[[WK]] layout({{ ?}}out_in) : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT: %[[V:.*]] = attn.linear %[[X]], %[[WV]] layout({{ ?}}out_in) : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(1) mask<causal> {scale = 2.500000e-01 : f32}
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[O]], %[[WO]] layout({{ ?}}out_in) : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @separate_without_biases(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x16xf32>,
                                   %wv: tensor<16x16xf32>, %wo: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  %a = attn.self_attention %x heads(1) mask<causal> q(%wq) k(%wk) v(%wv) out(%wo)
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %a : tensor<?x?x16xf32>
}

// -----

// Only some projections have a bias.
// CHECK-LABEL: func.func @separate_mixed_biases
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x8xf32>, %[[W:[^:]*]]: tensor<8x8xf32>, %[[B:[^:]*]]: tensor<8xf32>)
// CHECK-NEXT: %[[Q:.*]] = attn.linear %[[X]], %[[W]], %[[B]] layout({{ ?}}out_in) : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[K:.*]] = attn.linear %[[X]], %[[W]] layout({{ ?}}out_in) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[V:.*]] = attn.linear %[[X]], %[[W]], %[[B]] layout({{ ?}}out_in)
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(8) mask<none> {scale = 1.000000e+00 : f32} : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[O]], %[[W]], %[[B]] layout({{ ?}}out_in)
// CHECK-NEXT: return %[[Y]]
func.func @separate_mixed_biases(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %a = attn.self_attention %x heads(8) mask<none> q(%w, %b) k(%w) v(%w, %b) out(%w, %b)
      : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----

// A packed [3D, D] projection is cut into rows 0..D, D..2D and 2D..3D, and its
// bias likewise.
// CHECK-LABEL: func.func @packed_qkv
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[W:[^:]*]]: tensor<24x8xf32>, %[[B:[^:]*]]: tensor<24xf32>, %[[WO:[^:]*]]: tensor<8x8xf32>)
// CHECK-NEXT: %[[WQ:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 0 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[WK:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 8 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[WV:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 16 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[BQ:.*]] = attn.slice %[[B]] {dim = 0 : i64, offset = 0 : i64, size = 8 : i64} : tensor<24xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[BK:.*]] = attn.slice %[[B]] {dim = 0 : i64, offset = 8 : i64, size = 8 : i64} : tensor<24xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[BV:.*]] = attn.slice %[[B]] {dim = 0 : i64, offset = 16 : i64, size = 8 : i64} : tensor<24xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[Q:.*]] = attn.linear %[[X]], %[[WQ]], %[[BQ]] layout({{ ?}}out_in)
// CHECK-NEXT: %[[K:.*]] = attn.linear %[[X]], %[[WK]], %[[BK]] layout({{ ?}}out_in)
// CHECK-NEXT: %[[V:.*]] = attn.linear %[[X]], %[[WV]], %[[BV]] layout({{ ?}}out_in)
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(2) mask<causal> {scale = 5.000000e-01 : f32}
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[O]], %[[WO]] layout({{ ?}}out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @packed_qkv(%x: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %b: tensor<24xf32>, %wo: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %a = attn.self_attention %x heads(2) mask<causal> qkv(%w, %b) out(%wo)
      : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// Packed without bias; an explicit scale wins over 1/sqrt(d_head) = 0.25.
// CHECK-LABEL: func.func @packed_qkv_explicit_scale
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x16xf32>, %[[W:[^:]*]]: tensor<48x16xf32>, %[[WO:[^:]*]]: tensor<16x16xf32>, %[[BO:[^:]*]]: tensor<16xf32>)
// CHECK-NEXT: %[[WQ:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 0 : i64, size = 16 : i64} : tensor<48x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[WK:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 16 : i64, size = 16 : i64}
// CHECK-NEXT: %[[WV:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 32 : i64, size = 16 : i64}
// CHECK-NEXT: %[[Q:.*]] = attn.linear %[[X]], %[[WQ]] layout({{ ?}}out_in)
// CHECK-NEXT: %[[K:.*]] = attn.linear %[[X]], %[[WK]] layout({{ ?}}out_in)
// CHECK-NEXT: %[[V:.*]] = attn.linear %[[X]], %[[WV]] layout({{ ?}}out_in)
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(4) mask<none> {scale = 1.250000e-01 : f32}
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[O]], %[[WO]], %[[BO]] layout({{ ?}}out_in)
// CHECK-NEXT: return %[[Y]]
func.func @packed_qkv_explicit_scale(%x: tensor<?x?x16xf32>, %w: tensor<48x16xf32>, %wo: tensor<16x16xf32>, %bo: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %a = attn.self_attention %x heads(4) mask<none> qkv(%w) out(%wo, %bo) {scale = 0.125 : f32}
      : (tensor<?x?x16xf32>, tensor<48x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %a : tensor<?x?x16xf32>
}

// -----

// Two blocks in a row are both decomposed; the second reads the first's output.
// CHECK-LABEL: func.func @two_blocks
// CHECK-NOT: attn.self_attention
// CHECK: %[[O1:.*]] = attn.sdpa
// CHECK-NEXT: %[[Y1:.*]] = attn.linear %[[O1]]
// CHECK-NEXT: %[[Q2:.*]] = attn.linear %[[Y1]]
// CHECK-NEXT: %[[K2:.*]] = attn.linear %[[Y1]]
// CHECK-NEXT: %[[V2:.*]] = attn.linear %[[Y1]]
// CHECK-NEXT: %[[O2:.*]] = attn.sdpa %[[Q2]], %[[K2]], %[[V2]]
// CHECK-NEXT: %[[Y2:.*]] = attn.linear %[[O2]]
// CHECK-NEXT: return %[[Y2]]
func.func @two_blocks(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %a = attn.self_attention %x heads(2) mask<causal> q(%w) k(%w) v(%w) out(%w)
      : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %b = attn.self_attention %a heads(2) mask<causal> q(%w) k(%w) v(%w) out(%w)
      : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %b : tensor<?x?x8xf32>
}
