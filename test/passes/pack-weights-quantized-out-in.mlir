// RUN: attn-opt %s -split-input-file -attn-pack-weights="panel-width=16 quantized-out-in=true" | FileCheck %s

// --precision=int8: quantized matrices are read [out, in] (a row of bytes
// per output), never in panels; an [in, out] one is transposed, its 4-bit
// group scales with it; f32 matrices as without the option.

// CHECK-LABEL: func.func @i8_out_in_kept
// CHECK-NOT: attn.transpose
// CHECK-NOT: attn.pack_panels
// CHECK: attn.linear {{.*}} layout({{ ?}}out_in) : (tensor<?x64xf32>, tensor<32x64xi8>, tensor<32xf32>)
func.func @i8_out_in_kept(%x: tensor<?x64xf32>, %w: tensor<32x64xi8>, %s: tensor<32xf32>) -> tensor<?x32xf32> {
  %y = attn.linear %x, %w scales %s layout(out_in) : (tensor<?x64xf32>, tensor<32x64xi8>, tensor<32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// CHECK-LABEL: func.func @four_bit_in_out_transposed
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xf32>, %[[W:[^:]*]]: tensor<32x32xui8>, %[[S:[^:]*]]: tensor<2x32xf32>)
// CHECK-NEXT: %[[T:.*]] = attn.transpose %[[W]] : tensor<32x32xui8> -> tensor<32x32xui8>
// CHECK-NEXT: %[[TS:.*]] = attn.transpose %[[S]] : tensor<2x32xf32> -> tensor<32x2xf32>
// CHECK-NEXT: attn.linear %[[X]], %[[T]] scales %[[TS]] layout({{ ?}}out_in)
// CHECK-NOT: attn.pack_panels
func.func @four_bit_in_out_transposed(%x: tensor<?x64xf32>, %w: tensor<32x32xui8>, %s: tensor<2x32xf32>) -> tensor<?x32xf32> {
  %y = attn.linear %x, %w scales %s layout(in_out) : (tensor<?x64xf32>, tensor<32x32xui8>, tensor<2x32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// CHECK-LABEL: func.func @f32_still_in_panels
// CHECK: attn.pack_panels
// CHECK: layout({{ ?}}panels)
func.func @f32_still_in_panels(%x: tensor<?x8xf32>, %w: tensor<32x8xf32>) -> tensor<?x32xf32> {
  %y = attn.linear %x, %w layout(out_in) : (tensor<?x8xf32>, tensor<32x8xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
