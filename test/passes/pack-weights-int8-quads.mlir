// RUN: attn-opt %s -split-input-file -attn-pack-weights="panel-width=64 quantized-out-in=true int8-panel-width=16" | FileCheck %s
// RUN: not attn-opt %s -split-input-file -attn-pack-weights="int8-panel-width=16" 2>&1 | FileCheck %s --check-prefix=ALONE

// ALONE: attn-pack-weights: int8-panel-width must be >= 0 and needs quantized-out-in

// --precision=int8 on a VNNI target: an i8 matrix whose inputs are whole
// blocks of 32 is packed into quads of inputs, [ceil(out / 16), in / 4, 16,
// 4] (an [out, in] one transposed first), its per-output scales kept; the
// last panel is padded (44 outputs: 3 panels).
// CHECK-LABEL: func.func @i8_out_in
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xf32>, %[[W:[^:]*]]: tensor<44x64xi8>, %[[S:[^:]*]]: tensor<44xf32>)
// CHECK-NEXT: %[[T:.*]] = attn.transpose %[[W]] : tensor<44x64xi8> -> tensor<64x44xi8>
// CHECK-NEXT: %[[P:.*]] = attn.pack_panels %[[T]] {width = 16 : i64} : tensor<64x44xi8> -> tensor<3x16x16x4xi8>
// CHECK-NEXT: attn.linear %[[X]], %[[P]] scales %[[S]] layout({{ ?}}panels) : (tensor<?x64xf32>, tensor<3x16x16x4xi8>, tensor<44xf32>) -> tensor<?x44xf32>
func.func @i8_out_in(%x: tensor<?x64xf32>, %w: tensor<44x64xi8>, %s: tensor<44xf32>) -> tensor<?x44xf32> {
  %y = attn.linear %x, %w scales %s layout(out_in) : (tensor<?x64xf32>, tensor<44x64xi8>, tensor<44xf32>) -> tensor<?x44xf32>
  return %y : tensor<?x44xf32>
}

// -----

// An [in, out] one (GPT-2's Conv1D) is packed as it is.
// CHECK-LABEL: func.func @i8_in_out
// CHECK-NOT: attn.transpose
// CHECK: attn.pack_panels %{{.*}} {width = 16 : i64} : tensor<96x32xi8> -> tensor<2x24x16x4xi8>
// CHECK: layout({{ ?}}panels)
func.func @i8_in_out(%x: tensor<?x?x96xf32>, %w: tensor<96x32xi8>, %s: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %y = attn.linear %x, %w, %b scales %s layout(in_out) : (tensor<?x?x96xf32>, tensor<96x32xi8>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// A 4-bit matrix whose groups are whole blocks of 32 is packed from its
// bytes (two inputs each), [ceil(out / 16), in / 8, 16, 4], an [out, in] one
// transposed first with its group scales, to [in / G, out], which are then
// packed as the bytes are, [ceil(out / 16), in / G, 16] (a panel's scales
// together; the last panel padded).
// CHECK-LABEL: func.func @q4_out_in
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x128xf32>, %[[W:[^:]*]]: tensor<20x64xui8>, %[[S:[^:]*]]: tensor<20x2xf32>)
// CHECK-NEXT: %[[T:.*]] = attn.transpose %[[W]] : tensor<20x64xui8> -> tensor<64x20xui8>
// CHECK-NEXT: %[[TS:.*]] = attn.transpose %[[S]] : tensor<20x2xf32> -> tensor<2x20xf32>
// CHECK-NEXT: %[[P:.*]] = attn.pack_panels %[[T]] {width = 16 : i64} : tensor<64x20xui8> -> tensor<2x16x16x4xui8>
// CHECK-NEXT: %[[PS:.*]] = attn.pack_panels %[[TS]] {width = 16 : i64} : tensor<2x20xf32> -> tensor<2x2x16xf32>
// CHECK-NEXT: attn.linear %[[X]], %[[P]] scales %[[PS]] layout({{ ?}}panels) : (tensor<?x128xf32>, tensor<2x16x16x4xui8>, tensor<2x2x16xf32>) -> tensor<?x20xf32>
func.func @q4_out_in(%x: tensor<?x128xf32>, %w: tensor<20x64xui8>, %s: tensor<20x2xf32>) -> tensor<?x20xf32> {
  %y = attn.linear %x, %w scales %s layout(out_in) : (tensor<?x128xf32>, tensor<20x64xui8>, tensor<20x2xf32>) -> tensor<?x20xf32>
  return %y : tensor<?x20xf32>
}

// -----

// An [in, out] one (GPT-2's Conv1D) has its scales [in / G, out] already.
// CHECK-LABEL: func.func @q4_in_out
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xf32>, %[[W:[^:]*]]: tensor<32x48xui8>, %[[S:[^:]*]]: tensor<2x48xf32>)
// CHECK-NEXT: %[[P:.*]] = attn.pack_panels %[[W]] {width = 16 : i64} : tensor<32x48xui8> -> tensor<3x8x16x4xui8>
// CHECK-NEXT: %[[PS:.*]] = attn.pack_panels %[[S]] {width = 16 : i64} : tensor<2x48xf32> -> tensor<3x2x16xf32>
// CHECK-NEXT: attn.linear %[[X]], %[[P]] scales %[[PS]] layout({{ ?}}panels) : (tensor<?x64xf32>, tensor<3x8x16x4xui8>, tensor<3x2x16xf32>) -> tensor<?x48xf32>
func.func @q4_in_out(%x: tensor<?x64xf32>, %w: tensor<32x48xui8>, %s: tensor<2x48xf32>) -> tensor<?x48xf32> {
  %y = attn.linear %x, %w scales %s layout(in_out) : (tensor<?x64xf32>, tensor<32x48xui8>, tensor<2x48xf32>) -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}

// -----

// Inputs that are not whole blocks of 32 keep [out, in] (f32 activations);
// 4-bit matrices with groups of 16 keep [out, in] (the dot products of
// Int8Linear.cpp: a block would take two group scales); f32 matrices are
// cut into f32 panels as before.
// CHECK-LABEL: func.func @kept
// CHECK: attn.linear {{.*}} layout({{ ?}}out_in) : (tensor<?x48xf32>, tensor<32x48xi8>, tensor<32xf32>)
// CHECK: attn.linear {{.*}} layout({{ ?}}out_in) : (tensor<?x64xf32>, tensor<32x32xui8>, tensor<32x4xf32>)
// CHECK: attn.pack_panels %{{.*}} : tensor<64x64xf32> -> tensor<1x64x64xf32>
// CHECK-NOT: xi8>
func.func @kept(%x: tensor<?x48xf32>, %w: tensor<32x48xi8>, %s: tensor<32xf32>, %h: tensor<?x64xf32>, %q: tensor<32x32xui8>, %g: tensor<32x4xf32>, %f: tensor<64x64xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x64xf32>) {
  %a = attn.linear %x, %w scales %s layout(out_in) : (tensor<?x48xf32>, tensor<32x48xi8>, tensor<32xf32>) -> tensor<?x32xf32>
  %b = attn.linear %h, %q scales %g layout(out_in) : (tensor<?x64xf32>, tensor<32x32xui8>, tensor<32x4xf32>) -> tensor<?x32xf32>
  %c = attn.linear %h, %f layout(out_in) : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %a, %b, %c : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x64xf32>
}
