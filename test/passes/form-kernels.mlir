// RUN: attn-opt %s -split-input-file -attn-form-kernels | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-form-kernels -attn-check-shapes | FileCheck %s --check-prefix=SHAPES

// SHAPES-LABEL: func.func @linear_gelu
// SHAPES: attn.kernel @k0_linear_gelu

// A linear and its activation form one kernel. The weight expression
// (weight -> transpose) and the bias stay outside and become kernel inputs
// after the activation.
// CHECK-LABEL: func.func @linear_gelu
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]})
// CHECK-NEXT: %[[W:.*]] = attn.weight "fc.weight" : tensor<16x8xf32>
// CHECK-NEXT: %[[WT:.*]] = attn.transpose %[[W]] : tensor<16x8xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[B:.*]] = attn.weight "fc.bias" : tensor<16xf32>
// CHECK-NEXT: %[[K:.*]] = attn.kernel @k0_linear_gelu(%[[X]], %[[WT]], %[[B]]) : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32> {
// CHECK-NEXT: ^bb0(%[[A:[^:]*]]: tensor<?x?x8xf32>, %[[AW:[^:]*]]: tensor<8x16xf32>, %[[AB:[^:]*]]: tensor<16xf32>):
// CHECK-NEXT:   %[[L:.*]] = attn.linear %[[A]], %[[AW]], %[[AB]] layout({{ ?}}in_out) : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT:   %[[G:.*]] = attn.gelu %[[L]] : tensor<?x?x16xf32>
// CHECK-NEXT:   attn.yield %[[G]] : tensor<?x?x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]] : tensor<?x?x16xf32>
func.func @linear_gelu(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x16xf32> {
  %w = attn.weight "fc.weight" : tensor<16x8xf32>
  %wt = attn.transpose %w : tensor<16x8xf32> -> tensor<8x16xf32>
  %b = attn.weight "fc.bias" : tensor<16xf32>
  %l = attn.linear %x, %wt, %b layout(in_out) : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %g = attn.gelu %l : tensor<?x?x16xf32>
  return %g : tensor<?x?x16xf32>
}

// -----

// CHECK-LABEL: func.func @linear_relu
// CHECK: attn.kernel @k0_linear_relu(
// CHECK-NEXT: ^bb0
// CHECK-NEXT: attn.linear
// CHECK-NEXT: attn.relu
// CHECK-NEXT: attn.yield
// CHECK-NOT: attn.kernel
func.func @linear_relu(%x: tensor<?x8xf32> {attn.dim_symbols = ["S"]}) -> tensor<?x16xf32> {
  %w = attn.weight "fc.weight" : tensor<8x16xf32>
  %l = attn.linear %x, %w layout(in_out) : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %r = attn.relu %l : tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}

// -----

// SHAPES-LABEL: func.func @linear_residual
// SHAPES: attn.kernel @k0_linear_add

// Residual add epilogue: the other add operand is a kernel input, listed with
// the activations, before the weight.
// CHECK-LABEL: func.func @linear_residual
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32> {{.*}}, %[[R:[^:]*]]: tensor<?x?x8xf32> {{.*}})
// CHECK-NEXT: %[[W:.*]] = attn.weight "proj.weight" : tensor<8x8xf32>
// CHECK-NEXT: %[[K:.*]] = attn.kernel @k0_linear_add(%[[X]], %[[R]], %[[W]]) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32> {
// CHECK-NEXT: ^bb0(%[[A:[^:]*]]: tensor<?x?x8xf32>, %[[AR:[^:]*]]: tensor<?x?x8xf32>, %[[AW:[^:]*]]: tensor<8x8xf32>):
// CHECK-NEXT:   %[[L:.*]] = attn.linear %[[A]], %[[AW]] layout({{ ?}}in_out)
// CHECK-NEXT:   %[[S:.*]] = attn.add %[[AR]], %[[L]] : tensor<?x?x8xf32>
// CHECK-NEXT:   attn.yield %[[S]] : tensor<?x?x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
func.func @linear_residual(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]},
                           %r: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x8xf32> {
  %w = attn.weight "proj.weight" : tensor<8x8xf32>
  %l = attn.linear %x, %w layout(in_out) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %a = attn.add %r, %l : tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// Bias, activation and residual all in the GEMM's kernel.
// CHECK-LABEL: func.func @linear_gelu_residual
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32> {{.*}}, %[[R:[^:]*]]: tensor<?x?x8xf32> {{.*}})
// CHECK: %[[W:.*]] = attn.weight "w"
// CHECK-NEXT: %[[B:.*]] = attn.weight "b"
// CHECK-NEXT: %[[K:.*]] = attn.kernel @k0_linear_gelu_add(%[[X]], %[[R]], %[[W]], %[[B]])
// CHECK-NEXT: ^bb0(%[[A:[^:]*]]: tensor<?x?x8xf32>, %[[AR:[^:]*]]: tensor<?x?x8xf32>, %[[AW:[^:]*]]: tensor<8x8xf32>, %[[AB:[^:]*]]: tensor<8xf32>):
// CHECK-NEXT:   %[[L:.*]] = attn.linear %[[A]], %[[AW]], %[[AB]]
// CHECK-NEXT:   %[[G:.*]] = attn.gelu %[[L]]
// CHECK-NEXT:   %[[S:.*]] = attn.add %[[G]], %[[AR]]
// CHECK-NEXT:   attn.yield %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
func.func @linear_gelu_residual(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}, %r: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x8xf32> {
  %w = attn.weight "w" : tensor<8x8xf32>
  %b = attn.weight "b" : tensor<8xf32>
  %l = attn.linear %x, %w, %b layout(in_out) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %g = attn.gelu %l : tensor<?x?x8xf32>
  %a = attn.add %g, %r : tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// SHAPES-LABEL: func.func @qkv_slices_sdpa
// SHAPES: attn.kernel @k0_linear
// SHAPES: attn.kernel @k1_sdpa

// The fused QKV GEMM is a kernel of its own; the three activation slices are
// read in place by the attention kernel.
// CHECK-LABEL: func.func @qkv_slices_sdpa
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>
// CHECK-NEXT: %[[W:.*]] = attn.weight "qkv.weight" : tensor<8x24xf32>
// CHECK-NEXT: %[[K0:.*]] = attn.kernel @k0_linear(%[[X]], %[[W]]) : (tensor<?x?x8xf32>, tensor<8x24xf32>) -> tensor<?x?x24xf32> {
// CHECK-NEXT: ^bb0(%[[A:[^:]*]]: tensor<?x?x8xf32>, %[[AW:[^:]*]]: tensor<8x24xf32>):
// CHECK-NEXT:   %[[L:.*]] = attn.linear %[[A]], %[[AW]] layout({{ ?}}in_out)
// CHECK-NEXT:   attn.yield %[[L]] : tensor<?x?x24xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[K1:.*]] = attn.kernel @k1_sdpa(%[[K0]]) : (tensor<?x?x24xf32>) -> tensor<?x?x8xf32> {
// CHECK-NEXT: ^bb0(%[[QKV:[^:]*]]: tensor<?x?x24xf32>):
// CHECK-NEXT:   %[[Q:.*]] = attn.slice %[[QKV]] {dim = 2 : i64, offset = 0 : i64, size = 8 : i64}
// CHECK-NEXT:   %[[K:.*]] = attn.slice %[[QKV]] {dim = 2 : i64, offset = 8 : i64, size = 8 : i64}
// CHECK-NEXT:   %[[V:.*]] = attn.slice %[[QKV]] {dim = 2 : i64, offset = 16 : i64, size = 8 : i64}
// CHECK-NEXT:   %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(2) mask<causal> {scale = 1.000000e+00 : f32}
// CHECK-NEXT:   attn.yield %[[O]] : tensor<?x?x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K1]]
func.func @qkv_slices_sdpa(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x8xf32> {
  %w = attn.weight "qkv.weight" : tensor<8x24xf32>
  %qkv = attn.linear %x, %w layout(in_out) : (tensor<?x?x8xf32>, tensor<8x24xf32>) -> tensor<?x?x24xf32>
  %q = attn.slice %qkv {dim = 2 : i64, offset = 0 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %k = attn.slice %qkv {dim = 2 : i64, offset = 8 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %v = attn.slice %qkv {dim = 2 : i64, offset = 16 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<causal> {scale = 1.0 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// A slice that is also used elsewhere is not absorbed: it is a kernel of its
// own whose result both users read.
// CHECK-LABEL: func.func @slice_with_another_use
// CHECK: %[[K0:.*]] = attn.kernel @k0_linear(
// CHECK: %[[K1:.*]] = attn.kernel @k1_slice(%[[K0]])
// CHECK-NEXT: ^bb0(%[[A:[^:]*]]: tensor<?x?x24xf32>):
// CHECK-NEXT:   %[[V:.*]] = attn.slice %[[A]] {dim = 2 : i64, offset = 16 : i64, size = 8 : i64}
// CHECK-NEXT:   attn.yield %[[V]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[K2:.*]] = attn.kernel @k2_sdpa(%[[K0]], %[[K1]]) : (tensor<?x?x24xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
// CHECK-NEXT: ^bb0(%[[B:[^:]*]]: tensor<?x?x24xf32>, %[[BV:[^:]*]]: tensor<?x?x8xf32>):
// CHECK-NEXT:   %[[Q:.*]] = attn.slice %[[B]] {dim = 2 : i64, offset = 0 : i64, size = 8 : i64}
// CHECK-NEXT:   %[[K:.*]] = attn.slice %[[B]] {dim = 2 : i64, offset = 8 : i64, size = 8 : i64}
// CHECK-NEXT:   %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[BV]]
// CHECK-NEXT:   attn.yield %[[O]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K2]], %[[K1]]
func.func @slice_with_another_use(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %w = attn.weight "w" : tensor<8x24xf32>
  %qkv = attn.linear %x, %w layout(in_out) : (tensor<?x?x8xf32>, tensor<8x24xf32>) -> tensor<?x?x24xf32>
  %q = attn.slice %qkv {dim = 2 : i64, offset = 0 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %k = attn.slice %qkv {dim = 2 : i64, offset = 8 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %v = attn.slice %qkv {dim = 2 : i64, offset = 16 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<causal> {scale = 1.0 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o, %v : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// An sdpa of plain inputs is a kernel alone; an activation after it is not a
// GEMM epilogue and gets its own kernel.
// CHECK-LABEL: func.func @sdpa_then_relu
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x?x8xf32> {{.*}}, %[[K:[^:]*]]: tensor<?x?x8xf32> {{.*}})
// CHECK-NEXT: %[[K0:.*]] = attn.kernel @k0_sdpa(%[[Q]], %[[K]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   attn.sdpa
// CHECK-NEXT:   attn.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[K1:.*]] = attn.kernel @k1_relu(%[[K0]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   attn.relu
// CHECK-NEXT:   attn.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K1]]
func.func @sdpa_then_relu(%q: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}, %k: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x8xf32> {
  %o = attn.sdpa %q, %k, %k heads(2) mask<none> {scale = 1.0 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  %r = attn.relu %o : tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// -----

// SHAPES-LABEL: func.func @add_layer_norm
// SHAPES: attn.kernel @k0_add_layer_norm

// A residual add used only by a layer norm joins it; gamma and beta come
// after the activations.
// CHECK-LABEL: func.func @add_layer_norm
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32> {{.*}}, %[[Y:[^:]*]]: tensor<?x?x8xf32> {{.*}})
// CHECK-NEXT: %[[G:.*]] = attn.weight "ln.weight" : tensor<8xf32>
// CHECK-NEXT: %[[B:.*]] = attn.weight "ln.bias" : tensor<8xf32>
// CHECK-NEXT: %[[K:.*]] = attn.kernel @k0_add_layer_norm(%[[X]], %[[Y]], %[[G]], %[[B]]) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32> {
// CHECK-NEXT: ^bb0(%[[A0:[^:]*]]: tensor<?x?x8xf32>, %[[A1:[^:]*]]: tensor<?x?x8xf32>, %[[AG:[^:]*]]: tensor<8xf32>, %[[AB:[^:]*]]: tensor<8xf32>):
// CHECK-NEXT:   %[[S:.*]] = attn.add %[[A0]], %[[A1]]
// CHECK-NEXT:   %[[N:.*]] = attn.layer_norm %[[S]], %[[AG]], %[[AB]]
// CHECK-NEXT:   attn.yield %[[N]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
func.func @add_layer_norm(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]},
                          %y: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x8xf32> {
  %g = attn.weight "ln.weight" : tensor<8xf32>
  %b = attn.weight "ln.bias" : tensor<8xf32>
  %a = attn.add %x, %y : tensor<?x?x8xf32>
  %n = attn.layer_norm %a, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

// The add is also returned: it is yielded from its own kernel and the norm
// reads it from there.
// CHECK-LABEL: func.func @add_two_uses
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32> {{.*}}, %[[Y:[^:]*]]: tensor<?x?x8xf32> {{.*}})
// CHECK-NEXT: %[[G:.*]] = attn.weight "ln.weight"
// CHECK-NEXT: %[[K0:.*]] = attn.kernel @k0_add(%[[X]], %[[Y]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   %[[S:.*]] = attn.add
// CHECK-NEXT:   attn.yield %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[K1:.*]] = attn.kernel @k1_layer_norm(%[[K0]], %[[G]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   %[[N:.*]] = attn.layer_norm
// CHECK-NEXT:   attn.yield %[[N]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K0]], %[[K1]]
func.func @add_two_uses(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}, %y: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %g = attn.weight "ln.weight" : tensor<8xf32>
  %a = attn.add %x, %y : tensor<?x?x8xf32>
  %n = attn.layer_norm %a, %g, %g {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %a, %n : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// A residual add with two uses stays with its linear (as an epilogue), is
// yielded, and the norm is a kernel of its own.
// CHECK-LABEL: func.func @linear_add_two_uses
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32> {{.*}}, %[[R:[^:]*]]: tensor<?x?x8xf32> {{.*}})
// CHECK: %[[K0:.*]] = attn.kernel @k0_linear_add(%[[X]], %[[R]], %{{.*}})
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   attn.linear
// CHECK-NEXT:   %[[S:.*]] = attn.add
// CHECK-NEXT:   attn.yield %[[S]]
// CHECK-NEXT: }
// CHECK: %[[K1:.*]] = attn.kernel @k1_layer_norm(%[[K0]], %{{.*}})
// CHECK-NOT: attn.add
// CHECK: return %[[K0]], %[[K1]]
func.func @linear_add_two_uses(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}, %r: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %w = attn.weight "w" : tensor<8x8xf32>
  %l = attn.linear %x, %w layout(in_out) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %a = attn.add %r, %l : tensor<?x?x8xf32>
  %g = attn.weight "ln.weight" : tensor<8xf32>
  %n = attn.layer_norm %a, %g, %g {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %a, %n : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// A linear whose result has two users keeps no epilogue.
// CHECK-LABEL: func.func @linear_two_uses
// CHECK: %[[K0:.*]] = attn.kernel @k0_linear(
// CHECK: %[[K1:.*]] = attn.kernel @k1_gelu(%[[K0]])
// CHECK: return %[[K1]], %[[K0]]
func.func @linear_two_uses(%x: tensor<?x8xf32> {attn.dim_symbols = ["S"]}) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %w = attn.weight "w" : tensor<8x16xf32>
  %l = attn.linear %x, %w layout(in_out) : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %g = attn.gelu %l : tensor<?x16xf32>
  return %g, %l : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// Only weight expressions: no kernels.
// CHECK-LABEL: func.func @weights_only
// CHECK-NOT: attn.kernel
// CHECK: attn.weight
// CHECK-NEXT: attn.transpose
// CHECK-NEXT: attn.scale
// CHECK-NEXT: return
func.func @weights_only() -> tensor<8x16xf32> {
  %w = attn.weight "w" : tensor<16x8xf32>
  %t = attn.transpose %w : tensor<16x8xf32> -> tensor<8x16xf32>
  %s = attn.scale %t {factor = 2.0 : f32} : tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}

// -----

// A whole block: kernels are numbered in program order.
// CHECK-LABEL: func.func @block
// CHECK: attn.kernel @k0_layer_norm(
// CHECK: attn.kernel @k1_linear(
// CHECK: attn.kernel @k2_sdpa(
// CHECK: attn.kernel @k3_linear_add(
// CHECK: attn.kernel @k4_layer_norm(
// CHECK: attn.kernel @k5_linear_gelu(
// CHECK: attn.kernel @k6_linear_add(
// CHECK-NOT: attn.kernel
// CHECK: return
// The only ops left outside kernels are weight expressions.
// CHECK-NOT: attn.linear
// SHAPES-LABEL: func.func @block
// SHAPES-COUNT-7: attn.kernel @k
func.func @block(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x8xf32> {
  %g1 = attn.weight "ln_1.weight" : tensor<8xf32>
  %b1 = attn.weight "ln_1.bias" : tensor<8xf32>
  %n1 = attn.layer_norm %x, %g1, %b1 {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %wqkv = attn.weight "attn.c_attn.weight" : tensor<8x24xf32>
  %qkv = attn.linear %n1, %wqkv layout(in_out) : (tensor<?x?x8xf32>, tensor<8x24xf32>) -> tensor<?x?x24xf32>
  %q = attn.slice %qkv {dim = 2 : i64, offset = 0 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %k = attn.slice %qkv {dim = 2 : i64, offset = 8 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %v = attn.slice %qkv {dim = 2 : i64, offset = 16 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<causal> {scale = 1.0 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  %wo = attn.weight "attn.c_proj.weight" : tensor<8x8xf32>
  %p = attn.linear %o, %wo layout(in_out) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %r1 = attn.add %x, %p : tensor<?x?x8xf32>
  %n2 = attn.layer_norm %r1, %g1, %b1 {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %wfc = attn.weight "mlp.c_fc.weight" : tensor<8x32xf32>
  %h = attn.linear %n2, %wfc layout(in_out) : (tensor<?x?x8xf32>, tensor<8x32xf32>) -> tensor<?x?x32xf32>
  %ge = attn.gelu %h : tensor<?x?x32xf32>
  %wpr = attn.weight "mlp.c_proj.weight" : tensor<32x8xf32>
  %m = attn.linear %ge, %wpr layout(in_out) : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  %r2 = attn.add %r1, %m : tensor<?x?x8xf32>
  return %r2 : tensor<?x?x8xf32>
}
