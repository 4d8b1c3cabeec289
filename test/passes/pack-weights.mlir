// RUN: attn-opt %s -split-input-file -attn-pack-weights | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-pack-weights -canonicalize | FileCheck %s --check-prefix=CANON

// CHECK-LABEL: func.func @out_in
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[W:[^:]*]]: tensor<16x8xf32>, %[[B:[^:]*]]: tensor<16xf32>)
// CHECK-NEXT: %[[T:.*]] = attn.transpose %[[W]] : tensor<16x8xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[X]], %[[T]], %[[B]] layout({{ ?}}in_out) : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT: return %[[Y]]
// CANON-LABEL: func.func @out_in
// CANON: attn.transpose
// CANON: layout({{ ?}}in_out)
func.func @out_in(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %y = attn.linear %x, %w, %b layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// CANON-LABEL: func.func @in_out_untouched
// CHECK-LABEL: func.func @in_out_untouched
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x8xf32>, %[[W:[^:]*]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[X]], %[[W]] layout({{ ?}}in_out) : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: attn.transpose
func.func @in_out_untouched(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>) -> tensor<?x16xf32> {
  %y = attn.linear %x, %w layout(in_out) : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// A weight stored [in, out] (GPT-2's Conv1D) that the frontend transposed to
// [out, in]: after packing and canonicalization the linear reads the stored
// weight, with no transpose left.
// (The pass's own greedy driver may already fold the two transposes.)
// CHECK-LABEL: func.func @frontend_transpose
// CHECK: %[[W:.*]] = attn.weight "fc.weight" : tensor<8x16xf32>
// CHECK: attn.linear {{.*}} layout({{ ?}}in_out) : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
// CANON-LABEL: func.func @frontend_transpose
// CANON-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>)
// CANON-NEXT: %[[W:.*]] = attn.weight "fc.weight" : tensor<8x16xf32>
// CANON-NEXT: %[[Y:.*]] = attn.linear %[[X]], %[[W]] layout({{ ?}}in_out) : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
// CANON-NEXT: return %[[Y]]
// CANON-NOT: attn.transpose
func.func @frontend_transpose(%x: tensor<?x?x8xf32>) -> tensor<?x?x16xf32> {
  %w = attn.weight "fc.weight" : tensor<8x16xf32>
  %wt = attn.transpose %w : tensor<8x16xf32> -> tensor<16x8xf32>
  %y = attn.linear %x, %wt layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Every linear of a function is packed, each with its own transpose.
// CANON-LABEL: func.func @two_linears
// CHECK-LABEL: func.func @two_linears
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x8xf32>, %[[W1:[^:]*]]: tensor<16x8xf32>, %[[W2:[^:]*]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[T1:.*]] = attn.transpose %[[W1]] : tensor<16x8xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[Y1:.*]] = attn.linear %[[X]], %[[T1]] layout({{ ?}}in_out)
// CHECK-NEXT: %[[G:.*]] = attn.gelu %[[Y1]]
// CHECK-NEXT: %[[T2:.*]] = attn.transpose %[[W2]] : tensor<8x16xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[Y2:.*]] = attn.linear %[[G]], %[[T2]] layout({{ ?}}in_out) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: return %[[Y2]]
func.func @two_linears(%x: tensor<?x8xf32>, %w1: tensor<16x8xf32>, %w2: tensor<8x16xf32>) -> tensor<?x8xf32> {
  %y1 = attn.linear %x, %w1 layout(out_in) : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %g = attn.gelu %y1 : tensor<?x16xf32>
  %y2 = attn.linear %g, %w2 layout(out_in) : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return %y2 : tensor<?x8xf32>
}

// -----

// A fused [out, in] QKV weight is transposed as a whole.
// CHECK-LABEL: func.func @fused_qkv_weight
// CHECK: %[[C:.*]] = attn.concat
// CHECK-NEXT: %[[T:.*]] = attn.transpose %[[C]] : tensor<24x8xf32> -> tensor<8x24xf32>
// CHECK-NEXT: attn.linear %{{.*}}, %[[T]] layout({{ ?}}in_out) : (tensor<?x?x8xf32>, tensor<8x24xf32>) -> tensor<?x?x24xf32>
// CANON-LABEL: func.func @fused_qkv_weight
// CANON: attn.concat
// CANON-NEXT: attn.transpose
func.func @fused_qkv_weight(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %wk: tensor<8x8xf32>) -> tensor<?x?x24xf32> {
  %w = attn.concat %wq, %wk, %wq {dim = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32> -> tensor<24x8xf32>
  %y = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<24x8xf32>) -> tensor<?x?x24xf32>
  return %y : tensor<?x?x24xf32>
}

// -----

// A 4-bit [out, in] matrix (bytes of two inputs) is transposed as bytes, and
// its group scales [out, in / G] with it, to [in / G, out].
// CHECK-LABEL: func.func @four_bit_out_in
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xf32>, %[[W:[^:]*]]: tensor<16x32xui8>, %[[S:[^:]*]]: tensor<16x2xf32>)
// CHECK-NEXT: %[[T:.*]] = attn.transpose %[[W]] : tensor<16x32xui8> -> tensor<32x16xui8>
// CHECK-NEXT: %[[TS:.*]] = attn.transpose %[[S]] : tensor<16x2xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[X]], %[[T]] scales %[[TS]] layout({{ ?}}in_out) : (tensor<?x64xf32>, tensor<32x16xui8>, tensor<2x16xf32>) -> tensor<?x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @four_bit_out_in(%x: tensor<?x64xf32>, %w: tensor<16x32xui8>, %s: tensor<16x2xf32>) -> tensor<?x16xf32> {
  %y = attn.linear %x, %w scales %s layout(out_in) : (tensor<?x64xf32>, tensor<16x32xui8>, tensor<16x2xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
