// RUN: attn-opt %s -split-input-file -attn-fuse-gated-linears | FileCheck %s

// SwiGLU, Llama's down(silu(gate(x)) * up(x)): [out, in] weights are
// interleaved along dim 0 into one GEMM whose glu epilogue applies silu to
// the even features and multiplies by the odd ones.
// CHECK-LABEL: func.func @swiglu_out_in
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[WG:[^:]*]]: tensor<12x8xf32>, %[[WU:[^:]*]]: tensor<12x8xf32>, %[[WD:[^:]*]]: tensor<8x12xf32>)
// CHECK-NEXT: %[[W:.*]] = attn.interleave %[[WG]], %[[WU]] {dim = 0 : i64} : tensor<12x8xf32>, tensor<12x8xf32> -> tensor<24x8xf32>
// CHECK-NEXT: %[[GU:.*]] = attn.linear %[[X]], %[[W]] layout({{ ?}}out_in) : (tensor<?x?x8xf32>, tensor<24x8xf32>) -> tensor<?x?x24xf32>
// CHECK-NEXT: %[[M:.*]] = attn.glu %[[GU]] {activation = "silu"} : tensor<?x?x24xf32> -> tensor<?x?x12xf32>
// CHECK-NEXT: %[[Y:.*]] = attn.linear %[[M]], %[[WD]] layout({{ ?}}out_in)
// CHECK-NEXT: return %[[Y]]
func.func @swiglu_out_in(%x: tensor<?x?x8xf32>, %wg: tensor<12x8xf32>, %wu: tensor<12x8xf32>, %wd: tensor<8x12xf32>) -> tensor<?x?x8xf32> {
  %g = attn.linear %x, %wg layout(out_in) : (tensor<?x?x8xf32>, tensor<12x8xf32>) -> tensor<?x?x12xf32>
  %a = attn.silu %g : tensor<?x?x12xf32>
  %u = attn.linear %x, %wu layout(out_in) : (tensor<?x?x8xf32>, tensor<12x8xf32>) -> tensor<?x?x12xf32>
  %m = attn.mul %a, %u : tensor<?x?x12xf32>
  %y = attn.linear %m, %wd layout(out_in) : (tensor<?x?x12xf32>, tensor<8x12xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// GeGLU with the up projection first, [in, out] weights (interleaved along
// dim 1) and biases (interleaved too).
// CHECK-LABEL: func.func @geglu_in_out_biases
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x8xf32>, %[[WG:[^:]*]]: tensor<8x4xf32>, %[[BG:[^:]*]]: tensor<4xf32>, %[[WU:[^:]*]]: tensor<8x4xf32>, %[[BU:[^:]*]]: tensor<4xf32>)
// CHECK-NEXT: %[[W:.*]] = attn.interleave %[[WG]], %[[WU]] {dim = 1 : i64} : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[B:.*]] = attn.interleave %[[BG]], %[[BU]] {dim = 0 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[GU:.*]] = attn.linear %[[X]], %[[W]], %[[B]] layout({{ ?}}in_out)
// CHECK-NEXT: %[[M:.*]] = attn.glu %[[GU]] {activation = "gelu"} : tensor<?x8xf32> -> tensor<?x4xf32>
// CHECK-NEXT: return %[[M]]
func.func @geglu_in_out_biases(%x: tensor<?x8xf32>, %wg: tensor<8x4xf32>, %bg: tensor<4xf32>, %wu: tensor<8x4xf32>, %bu: tensor<4xf32>) -> tensor<?x4xf32> {
  %u = attn.linear %x, %wu, %bu layout(in_out) : (tensor<?x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %g = attn.linear %x, %wg, %bg layout(in_out) : (tensor<?x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %a = attn.gelu %g : tensor<?x4xf32>
  %m = attn.mul %u, %a : tensor<?x4xf32>
  return %m : tensor<?x4xf32>
}

// -----

// Not fused: the linears read different inputs; the gate's activation is
// also an output (used twice); one has a bias and the other not; the gate is
// not activated (a bilinear product: which operand is the gate is unknown).
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: attn.interleave
// CHECK-NOT: attn.glu
func.func @not_fused(%x: tensor<?x8xf32>, %z: tensor<?x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %g1 = attn.linear %x, %w layout(out_in) : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %a1 = attn.silu %g1 : tensor<?x4xf32>
  %u1 = attn.linear %z, %w layout(out_in) : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %m1 = attn.mul %a1, %u1 : tensor<?x4xf32>
  %g2 = attn.linear %x, %w layout(out_in) : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %a2 = attn.silu %g2 : tensor<?x4xf32>
  %u2 = attn.linear %x, %w layout(out_in) : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %m2 = attn.mul %a2, %u2 : tensor<?x4xf32>
  %g3 = attn.linear %x, %w, %b layout(out_in) : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %a3 = attn.silu %g3 : tensor<?x4xf32>
  %u3 = attn.linear %x, %w layout(out_in) : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %m3 = attn.mul %a3, %u3 : tensor<?x4xf32>
  %g4 = attn.linear %x, %w layout(out_in) : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %u4 = attn.linear %x, %w layout(out_in) : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %m4 = attn.mul %g4, %u4 : tensor<?x4xf32>
  return %m1, %m2, %a2, %m3, %m4 : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// 4-bit [in, out] gate and up: bytes and group scales [in / G, out] are both
// interleaved along the outputs, dim 1.
// CHECK-LABEL: func.func @swiglu_four_bit_in_out
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xf32>, %[[WG:[^:]*]]: tensor<32x4xui8>, %[[SG:[^:]*]]: tensor<2x4xf32>, %[[WU:[^:]*]]: tensor<32x4xui8>, %[[SU:[^:]*]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[W:.*]] = attn.interleave %[[WG]], %[[WU]] {dim = 1 : i64} : tensor<32x4xui8>, tensor<32x4xui8> -> tensor<32x8xui8>
// CHECK-NEXT: %[[S:.*]] = attn.interleave %[[SG]], %[[SU]] {dim = 1 : i64} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[GU:.*]] = attn.linear %[[X]], %[[W]] scales %[[S]] layout({{ ?}}in_out) : (tensor<?x64xf32>, tensor<32x8xui8>, tensor<2x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: attn.glu %[[GU]] {activation = "silu"}
func.func @swiglu_four_bit_in_out(%x: tensor<?x64xf32>, %wg: tensor<32x4xui8>, %sg: tensor<2x4xf32>, %wu: tensor<32x4xui8>, %su: tensor<2x4xf32>) -> tensor<?x4xf32> {
  %g = attn.linear %x, %wg scales %sg layout(in_out) : (tensor<?x64xf32>, tensor<32x4xui8>, tensor<2x4xf32>) -> tensor<?x4xf32>
  %a = attn.silu %g : tensor<?x4xf32>
  %u = attn.linear %x, %wu scales %su layout(in_out) : (tensor<?x64xf32>, tensor<32x4xui8>, tensor<2x4xf32>) -> tensor<?x4xf32>
  %m = attn.mul %a, %u : tensor<?x4xf32>
  return %m : tensor<?x4xf32>
}

// -----

// Gate and up with different groups (scales [2, 4] against [4, 4]) are not
// fused: one GEMM has one group size.
// CHECK-LABEL: func.func @four_bit_groups_differ
// CHECK-NOT: attn.interleave
// CHECK-NOT: attn.glu
func.func @four_bit_groups_differ(%x: tensor<?x64xf32>, %wg: tensor<32x4xui8>, %sg: tensor<2x4xf32>, %wu: tensor<32x4xui8>, %su: tensor<4x4xf32>) -> tensor<?x4xf32> {
  %g = attn.linear %x, %wg scales %sg layout(in_out) : (tensor<?x64xf32>, tensor<32x4xui8>, tensor<2x4xf32>) -> tensor<?x4xf32>
  %a = attn.silu %g : tensor<?x4xf32>
  %u = attn.linear %x, %wu scales %su layout(in_out) : (tensor<?x64xf32>, tensor<32x4xui8>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %m = attn.mul %a, %u : tensor<?x4xf32>
  return %m : tensor<?x4xf32>
}
