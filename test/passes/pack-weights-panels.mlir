// RUN: attn-opt %s -split-input-file '-attn-pack-weights=panel-width=16' | FileCheck %s
// RUN: not attn-opt %s -split-input-file '-attn-pack-weights=panel-width=-1' 2>&1 | FileCheck %s --check-prefix=NEG

// NEG: panel-width must be >= 0

// An [out, in] weight is transposed, then cut into panels of 16 outputs.
// CHECK-LABEL: func.func @out_in
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[W:[^:]*]]: tensor<32x8xf32>, %[[B:[^:]*]]: tensor<32xf32>)
// CHECK-NEXT: %[[T:.*]] = attn.transpose %[[W]] : tensor<32x8xf32> -> tensor<8x32xf32>
// CHECK-NEXT: %[[P:.*]] = attn.pack_panels %[[T]] {width = 16 : i64} : tensor<8x32xf32> -> tensor<2x8x16xf32>
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[X]], %[[P]], %[[B]] layout({{ ?}}panels) : (tensor<?x?x8xf32>, tensor<2x8x16xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @out_in(%x: tensor<?x?x8xf32>, %w: tensor<32x8xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %y = attn.linear %x, %w, %b layout(out_in) : (tensor<?x?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// 24 outputs are one and a half 16-wide panels: two panels, the second
// padded with zeros; the linear still has 24 outputs.
// CHECK-LABEL: func.func @not_divisible
// CHECK: %[[P:.*]] = attn.pack_panels %{{.*}} {width = 16 : i64} : tensor<8x24xf32> -> tensor<2x8x16xf32>
// CHECK: attn.linear %{{.*}}, %[[P]] layout({{ ?}}panels) : (tensor<?x8xf32>, tensor<2x8x16xf32>) -> tensor<?x24xf32>
func.func @not_divisible(%x: tensor<?x8xf32>, %w: tensor<8x24xf32>) -> tensor<?x24xf32> {
  %y = attn.linear %x, %w layout(in_out) : (tensor<?x8xf32>, tensor<8x24xf32>) -> tensor<?x24xf32>
  return %y : tensor<?x24xf32>
}

// -----

// Fewer outputs than a panel would be mostly padding: the weight stays
// [in, out].
// CHECK-LABEL: func.func @narrow
// CHECK-NOT: attn.pack_panels
// CHECK: attn.linear {{.*}} layout({{ ?}}in_out) : (tensor<?x8xf32>, tensor<8x12xf32>) -> tensor<?x12xf32>
func.func @narrow(%x: tensor<?x8xf32>, %w: tensor<8x12xf32>) -> tensor<?x12xf32> {
  %y = attn.linear %x, %w layout(in_out) : (tensor<?x8xf32>, tensor<8x12xf32>) -> tensor<?x12xf32>
  return %y : tensor<?x12xf32>
}

// -----

// Packing is idempotent: a linear already in panels is left alone.
// CHECK-LABEL: func.func @already_panels
// CHECK-NEXT: attn.linear {{.*}} layout({{ ?}}panels)
// CHECK-NEXT: return
func.func @already_panels(%x: tensor<?x8xf32>, %p: tensor<2x8x16xf32>) -> tensor<?x32xf32> {
  %y = attn.linear %x, %p layout(panels) : (tensor<?x8xf32>, tensor<2x8x16xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// A 4-bit [in, out] matrix is packed as bytes: [out / 16, in / 2, 16], a
// panel row holding two inputs of each of its outputs; the scales [in / G,
// out] stay as they are.
// CHECK-LABEL: func.func @four_bit_panels
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xf32>, %[[W:[^:]*]]: tensor<32x32xui8>, %[[S:[^:]*]]: tensor<2x32xf32>)
// CHECK-NEXT: %[[P:.*]] = attn.pack_panels %[[W]] {width = 16 : i64} : tensor<32x32xui8> -> tensor<2x32x16xui8>
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[X]], %[[P]] scales %[[S]] layout({{ ?}}panels) : (tensor<?x64xf32>, tensor<2x32x16xui8>, tensor<2x32xf32>) -> tensor<?x32xf32>
func.func @four_bit_panels(%x: tensor<?x64xf32>, %w: tensor<32x32xui8>, %s: tensor<2x32xf32>) -> tensor<?x32xf32> {
  %y = attn.linear %x, %w scales %s layout(in_out) : (tensor<?x64xf32>, tensor<32x32xui8>, tensor<2x32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
