// RUN: attn-opt %s -split-input-file -canonicalize | FileCheck %s

// CHECK-LABEL: func.func @transpose_transpose
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: return %[[W]] : tensor<16x8xf32>
func.func @transpose_transpose(%w: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %t = attn.transpose %w : tensor<16x8xf32> -> tensor<8x16xf32>
  %tt = attn.transpose %t : tensor<8x16xf32> -> tensor<16x8xf32>
  return %tt : tensor<16x8xf32>
}

// -----

// A weight stored [in, out], transposed by the frontend and back by
// pack-weights, is the stored weight again.
// CHECK-LABEL: func.func @weight_transpose_transpose
// CHECK-NEXT: %[[W:.*]] = attn.weight "w" : tensor<8x16xf32>
// CHECK-NEXT: return %[[W]] : tensor<8x16xf32>
func.func @weight_transpose_transpose() -> tensor<8x16xf32> {
  %w = attn.weight "w" : tensor<8x16xf32>
  %t = attn.transpose %w : tensor<8x16xf32> -> tensor<16x8xf32>
  %tt = attn.transpose %t : tensor<16x8xf32> -> tensor<8x16xf32>
  return %tt : tensor<8x16xf32>
}

// -----

// One transpose stays.
// CHECK-LABEL: func.func @single_transpose
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: %[[T:.*]] = attn.transpose %[[W]] : tensor<16x8xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[T]]
func.func @single_transpose(%w: tensor<16x8xf32>) -> tensor<8x16xf32> {
  %t = attn.transpose %w : tensor<16x8xf32> -> tensor<8x16xf32>
  return %t : tensor<8x16xf32>
}

// -----

// Three transposes are one.
// CHECK-LABEL: func.func @triple_transpose
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: %[[T:.*]] = attn.transpose %[[W]] : tensor<16x8xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[T]]
func.func @triple_transpose(%w: tensor<16x8xf32>) -> tensor<8x16xf32> {
  %t = attn.transpose %w : tensor<16x8xf32> -> tensor<8x16xf32>
  %tt = attn.transpose %t : tensor<8x16xf32> -> tensor<16x8xf32>
  %ttt = attn.transpose %tt : tensor<16x8xf32> -> tensor<8x16xf32>
  return %ttt : tensor<8x16xf32>
}

// -----

// CHECK-LABEL: func.func @concat_of_covering_slices
// CHECK-SAME: (%[[W:.*]]: tensor<24x8xf32>)
// CHECK-NEXT: return %[[W]] : tensor<24x8xf32>
func.func @concat_of_covering_slices(%w: tensor<24x8xf32>) -> tensor<24x8xf32> {
  %q = attn.slice %w {dim = 0 : i64, offset = 0 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %k = attn.slice %w {dim = 0 : i64, offset = 8 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %v = attn.slice %w {dim = 0 : i64, offset = 16 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %c = attn.concat %q, %k, %v {dim = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32> -> tensor<24x8xf32>
  return %c : tensor<24x8xf32>
}

// -----

// Uneven pieces along the last dim of an activation also cover it.
// CHECK-LABEL: func.func @concat_of_covering_slices_last_dim
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x24xf32>)
// CHECK-NEXT: return %[[X]] : tensor<?x?x24xf32>
func.func @concat_of_covering_slices_last_dim(%x: tensor<?x?x24xf32>) -> tensor<?x?x24xf32> {
  %a = attn.slice %x {dim = 2 : i64, offset = 0 : i64, size = 4 : i64} : tensor<?x?x24xf32> -> tensor<?x?x4xf32>
  %b = attn.slice %x {dim = 2 : i64, offset = 4 : i64, size = 20 : i64} : tensor<?x?x24xf32> -> tensor<?x?x20xf32>
  %c = attn.concat %a, %b {dim = 2 : i64} : tensor<?x?x4xf32>, tensor<?x?x20xf32> -> tensor<?x?x24xf32>
  return %c : tensor<?x?x24xf32>
}

// -----

// Slices out of order are a permutation, not the source.
// CHECK-LABEL: func.func @concat_of_slices_out_of_order
// CHECK-SAME: (%[[W:.*]]: tensor<24x8xf32>)
// CHECK-DAG: %[[A:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 8 : i64, size = 8 : i64}
// CHECK-DAG: %[[B:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 0 : i64, size = 8 : i64}
// CHECK-DAG: %[[C:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 16 : i64, size = 8 : i64}
// CHECK: %[[R:.*]] = attn.concat %[[A]], %[[B]], %[[C]] {dim = 0 : i64}
// CHECK-NEXT: return %[[R]]
func.func @concat_of_slices_out_of_order(%w: tensor<24x8xf32>) -> tensor<24x8xf32> {
  %k = attn.slice %w {dim = 0 : i64, offset = 8 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %q = attn.slice %w {dim = 0 : i64, offset = 0 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %v = attn.slice %w {dim = 0 : i64, offset = 16 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %c = attn.concat %k, %q, %v {dim = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32> -> tensor<24x8xf32>
  return %c : tensor<24x8xf32>
}

// -----

// Slices that leave the tail out do not cover the source.
// CHECK-LABEL: func.func @concat_of_partial_slices
// CHECK: attn.slice
// CHECK: attn.slice
// CHECK: attn.concat
func.func @concat_of_partial_slices(%w: tensor<24x8xf32>) -> tensor<16x8xf32> {
  %q = attn.slice %w {dim = 0 : i64, offset = 0 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %k = attn.slice %w {dim = 0 : i64, offset = 8 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %c = attn.concat %q, %k {dim = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// -----

// Slices of two different tensors.
// CHECK-LABEL: func.func @concat_of_slices_of_two_sources
// CHECK-SAME: (%[[A:[^:]*]]: tensor<16x8xf32>, %[[B:[^:]*]]: tensor<16x8xf32>)
// CHECK-NEXT: %[[SA:.*]] = attn.slice %[[A]]
// CHECK-NEXT: %[[SB:.*]] = attn.slice %[[B]]
// CHECK-NEXT: %[[C:.*]] = attn.concat %[[SA]], %[[SB]]
// CHECK-NEXT: return %[[C]]
func.func @concat_of_slices_of_two_sources(%a: tensor<16x8xf32>, %b: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %sa = attn.slice %a {dim = 0 : i64, offset = 0 : i64, size = 8 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>
  %sb = attn.slice %b {dim = 0 : i64, offset = 8 : i64, size = 8 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>
  %c = attn.concat %sa, %sb {dim = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// -----

// Slices along dim 1 joined along dim 0 are not the source.
// CHECK-LABEL: func.func @concat_of_slices_other_dim
// CHECK: attn.concat
func.func @concat_of_slices_other_dim(%w: tensor<8x16xf32>) -> tensor<16x8xf32> {
  %a = attn.slice %w {dim = 1 : i64, offset = 0 : i64, size = 8 : i64} : tensor<8x16xf32> -> tensor<8x8xf32>
  %b = attn.slice %w {dim = 1 : i64, offset = 8 : i64, size = 8 : i64} : tensor<8x16xf32> -> tensor<8x8xf32>
  %c = attn.concat %a, %b {dim = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// -----

// CHECK-LABEL: func.func @concat_single_input
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: return %[[W]] : tensor<16x8xf32>
func.func @concat_single_input(%w: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %c = attn.concat %w {dim = 0 : i64} : tensor<16x8xf32> -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}

// -----

// The verifier lets a dynamic input extent meet a static result; the one-input
// concat is then a cast and must not fold to a value of another type.
// CHECK-LABEL: func.func @concat_single_input_other_type
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>)
// CHECK-NEXT: %[[C:.*]] = attn.concat %[[X]] {dim = 0 : i64} : tensor<?x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[C]] : tensor<4x8xf32>
func.func @concat_single_input_other_type(%x: tensor<?x8xf32>) -> tensor<4x8xf32> {
  %c = attn.concat %x {dim = 0 : i64} : tensor<?x8xf32> -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @slice_full_range
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: return %[[W]] : tensor<16x8xf32>
func.func @slice_full_range(%w: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %s = attn.slice %w {dim = 1 : i64, offset = 0 : i64, size = 8 : i64} : tensor<16x8xf32> -> tensor<16x8xf32>
  return %s : tensor<16x8xf32>
}

// -----

// CHECK-LABEL: func.func @slice_full_range_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>)
// CHECK-NEXT: return %[[X]] : tensor<?x?x8xf32>
func.func @slice_full_range_dynamic(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %s = attn.slice %x {dim = 2 : i64, offset = 0 : i64, size = 8 : i64} : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %s : tensor<?x?x8xf32>
}

// -----

// A prefix, and a range of the same size at another offset, stay.
// CHECK-LABEL: func.func @slice_partial
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: %[[A:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 0 : i64, size = 8 : i64}
// CHECK-NEXT: %[[B:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 8 : i64, size = 8 : i64}
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @slice_partial(%w: tensor<16x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %a = attn.slice %w {dim = 0 : i64, offset = 0 : i64, size = 8 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>
  %b = attn.slice %w {dim = 0 : i64, offset = 8 : i64, size = 8 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>
  return %a, %b : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A prefix of a dynamic dim has a static type and stays.
// CHECK-LABEL: func.func @slice_prefix_of_dynamic
// CHECK: attn.slice
func.func @slice_prefix_of_dynamic(%x: tensor<?x8xf32>) -> tensor<4x8xf32> {
  %s = attn.slice %x {dim = 0 : i64, offset = 0 : i64, size = 4 : i64} : tensor<?x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @scale_by_one
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: return %[[W]] : tensor<16x8xf32>
func.func @scale_by_one(%w: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %s = attn.scale %w {factor = 1.0 : f32} : tensor<16x8xf32>
  return %s : tensor<16x8xf32>
}

// -----

// CHECK-LABEL: func.func @scale_scale
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: %[[S:.*]] = attn.scale %[[W]] {factor = 1.250000e-01 : f32} : tensor<16x8xf32>
// CHECK-NEXT: return %[[S]]
func.func @scale_scale(%w: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %a = attn.scale %w {factor = 0.5 : f32} : tensor<16x8xf32>
  %b = attn.scale %a {factor = 0.25 : f32} : tensor<16x8xf32>
  return %b : tensor<16x8xf32>
}

// -----

// Factors whose product is 1 cancel out.
// CHECK-LABEL: func.func @scale_scale_inverse
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32>)
// CHECK-NEXT: return %[[W]] : tensor<16x8xf32>
func.func @scale_scale_inverse(%w: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %a = attn.scale %w {factor = 4.0 : f32} : tensor<16x8xf32>
  %b = attn.scale %a {factor = 0.25 : f32} : tensor<16x8xf32>
  return %b : tensor<16x8xf32>
}

// -----

// The inner scale has another use: it stays, and the outer one reads the
// weight directly.
// CHECK-LABEL: func.func @scale_scale_shared
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32>)
// CHECK-DAG: %[[A:.*]] = attn.scale %[[W]] {factor = 5.000000e-01 : f32}
// CHECK-DAG: %[[B:.*]] = attn.scale %[[W]] {factor = 1.500000e+00 : f32}
// CHECK: return %[[A]], %[[B]]
func.func @scale_scale_shared(%w: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %a = attn.scale %w {factor = 0.5 : f32} : tensor<16x8xf32>
  %b = attn.scale %a {factor = 3.0 : f32} : tensor<16x8xf32>
  return %a, %b : tensor<16x8xf32>, tensor<16x8xf32>
}

// -----

// Model ops that are unused disappear (they are Pure); used ones stay.
// CHECK-LABEL: func.func @dead_model_ops
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[W:[^:]*]]: tensor<16x8xf32>)
// CHECK-NEXT: %[[L:.*]] = attn.linear %[[X]], %[[W]]
// CHECK-NEXT: return %[[L]]
func.func @dead_model_ops(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x?x16xf32> {
  %l = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %g = attn.gelu %l : tensor<?x?x16xf32>
  %a = attn.add %x, %x : tensor<?x?x8xf32>
  return %l : tensor<?x?x16xf32>
}
