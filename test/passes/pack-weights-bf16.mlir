// RUN: attn-opt %s -split-input-file '-attn-pack-weights=panel-width=16 bf16-pairs=true' | FileCheck %s
// RUN: not attn-opt %s -split-input-file '-attn-pack-weights=bf16-pairs=true' 2>&1 | FileCheck %s --check-prefix=NO-PANELS

// NO-PANELS: attn-pack-weights: bf16-pairs needs a panel-width

// attnc --precision=bf16: an f32 weight is packed into bf16 pairs of inputs,
// [out / 16, in / 2, 16, 2], and the linear reads them.
// CHECK-LABEL: func.func @f32_pairs
// CHECK: %[[P:.*]] = attn.pack_panels %{{.*}} {width = 16 : i64} : tensor<8x32xf32> -> tensor<2x4x16x2xbf16>
// CHECK: attn.linear %{{.*}}, %[[P]], %{{.*}} layout({{ ?}}panels) : (tensor<?x?x8xf32>, tensor<2x4x16x2xbf16>, tensor<32xf32>) -> tensor<?x?x32xf32>
func.func @f32_pairs(%x: tensor<?x?x8xf32>, %w: tensor<32x8xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %y = attn.linear %x, %w, %b layout(out_in) : (tensor<?x?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// A bf16 weight (a Llama checkpoint's) too, its padded last panel with it.
// CHECK-LABEL: func.func @bf16_padded
// CHECK: attn.pack_panels %{{.*}} {width = 16 : i64} : tensor<8x24xbf16> -> tensor<2x4x16x2xbf16>
// CHECK: -> tensor<?x24xf32>
func.func @bf16_padded(%x: tensor<?x8xf32>, %w: tensor<8x24xbf16>) -> tensor<?x24xf32> {
  %y = attn.linear %x, %w layout(in_out) : (tensor<?x8xf32>, tensor<8x24xbf16>) -> tensor<?x24xf32>
  return %y : tensor<?x24xf32>
}

// -----

// Fewer outputs than a panel: f32 keeps its [in, out] rows, bf16 pairs take
// one padded panel (every linear's products in bf16).
// CHECK-LABEL: func.func @narrow
// CHECK: attn.pack_panels %{{.*}} {width = 16 : i64} : tensor<8x10xf32> -> tensor<1x4x16x2xbf16>
// CHECK: -> tensor<?x10xf32>
func.func @narrow(%x: tensor<?x8xf32>, %w: tensor<8x10xf32>) -> tensor<?x10xf32> {
  %y = attn.linear %x, %w layout(in_out) : (tensor<?x8xf32>, tensor<8x10xf32>) -> tensor<?x10xf32>
  return %y : tensor<?x10xf32>
}

// -----

// An odd number of inputs has no pairs, and f16 and quantized weights keep
// their own GEMMs: f32 panels of their own type.
// CHECK-LABEL: func.func @kept
// CHECK: attn.pack_panels %{{.*}} : tensor<7x32xf32> -> tensor<2x7x16xf32>
// CHECK: attn.pack_panels %{{.*}} : tensor<8x32xf16> -> tensor<2x8x16xf16>
// CHECK: attn.pack_panels %{{.*}} : tensor<8x32xi8> -> tensor<2x8x16xi8>
func.func @kept(%x: tensor<?x7xf32>, %w: tensor<7x32xf32>, %h: tensor<?x8xf32>, %v: tensor<8x32xf16>, %q: tensor<8x32xi8>, %s: tensor<32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %a = attn.linear %x, %w layout(in_out) : (tensor<?x7xf32>, tensor<7x32xf32>) -> tensor<?x32xf32>
  %b = attn.linear %h, %v layout(in_out) : (tensor<?x8xf32>, tensor<8x32xf16>) -> tensor<?x32xf32>
  %c = attn.linear %h, %q scales %s layout(in_out) : (tensor<?x8xf32>, tensor<8x32xi8>, tensor<32xf32>) -> tensor<?x32xf32>
  return %a, %b, %c : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}
