// RUN: attn-opt %s -split-input-file -attn-check-shapes | FileCheck %s

// Symbols that agree everywhere: the pass changes nothing.

// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]})
// CHECK-NEXT: %[[W:.*]] = attn.weight "attn.qkv.weight" : tensor<24x8xf32>
// CHECK-NEXT: %[[WO:.*]] = attn.weight "attn.out.weight" : tensor<8x8xf32>
// CHECK-NEXT: %[[A:.*]] = attn.self_attention %[[X]] heads(2) mask<causal> qkv(%[[W]]) out(%[[WO]])
// CHECK-NEXT: %[[R:.*]] = attn.add %[[X]], %[[A]] : tensor<?x?x8xf32>
// CHECK-NEXT: %[[G:.*]] = attn.weight "ln.weight" : tensor<8xf32>
// CHECK-NEXT: %[[N:.*]] = attn.layer_norm %[[R]], %[[G]], %[[G]]
// CHECK-NEXT: %[[W1:.*]] = attn.weight "fc.weight" : tensor<16x8xf32>
// CHECK-NEXT: %[[L:.*]] = attn.linear %[[N]], %[[W1]] layout({{ ?}}out_in)
// CHECK-NEXT: %[[GE:.*]] = attn.gelu %[[L]] : tensor<?x?x16xf32>
// CHECK-NEXT: return %[[GE]]
func.func @block(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x16xf32> {
  %w = attn.weight "attn.qkv.weight" : tensor<24x8xf32>
  %wo = attn.weight "attn.out.weight" : tensor<8x8xf32>
  %a = attn.self_attention %x heads(2) mask<causal> qkv(%w) out(%wo) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %r = attn.add %x, %a : tensor<?x?x8xf32>
  %g = attn.weight "ln.weight" : tensor<8xf32>
  %n = attn.layer_norm %r, %g, %g {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %w1 = attn.weight "fc.weight" : tensor<16x8xf32>
  %l = attn.linear %n, %w1 layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %ge = attn.gelu %l : tensor<?x?x16xf32>
  return %ge : tensor<?x?x16xf32>
}

// -----

// Two inputs that name the same symbols may be added.
// CHECK-LABEL: func.func @two_inputs_same_symbols
// CHECK-NEXT: attn.add
// CHECK-NEXT: return
func.func @two_inputs_same_symbols(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]},
                                   %y: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x8xf32> {
  %r = attn.add %x, %y : tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// -----

// Static inputs need no symbols; a partly dynamic one names only its dynamic dims.
// CHECK-LABEL: func.func @static_and_partly_dynamic
// CHECK-NEXT: attn.add
// CHECK-NEXT: attn.add
// CHECK-NEXT: return
func.func @static_and_partly_dynamic(%x: tensor<2x4x8xf32>, %y: tensor<?x4x8xf32> {attn.dim_symbols = ["B"]},
                                     %z: tensor<?x4x8xf32> {attn.dim_symbols = ["B"]}) -> (tensor<2x4x8xf32>, tensor<?x4x8xf32>) {
  %a = attn.add %x, %x : tensor<2x4x8xf32>
  %b = attn.add %y, %z : tensor<?x4x8xf32>
  return %a, %b : tensor<2x4x8xf32>, tensor<?x4x8xf32>
}

// -----

// Symbols flow through decomposed attention, activation slices and kernels.
// CHECK-LABEL: func.func @core_ops_and_kernels
// CHECK-COUNT-3: attn.slice
// CHECK: attn.sdpa
// CHECK: attn.kernel @k0
// CHECK: attn.yield
// CHECK: attn.add
// CHECK-NEXT: return
func.func @core_ops_and_kernels(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}, %w: tensor<8x24xf32>) -> tensor<?x?x8xf32> {
  %qkv = attn.linear %x, %w layout(in_out) : (tensor<?x?x8xf32>, tensor<8x24xf32>) -> tensor<?x?x24xf32>
  %q = attn.slice %qkv {dim = 2 : i64, offset = 0 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %k = attn.slice %qkv {dim = 2 : i64, offset = 8 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %v = attn.slice %qkv {dim = 2 : i64, offset = 16 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<causal> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  %g = attn.kernel @k0(%o) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  ^bb0(%a: tensor<?x?x8xf32>):
    %e = attn.gelu %a : tensor<?x?x8xf32>
    attn.yield %e : tensor<?x?x8xf32>
  }
  %r = attn.add %x, %g : tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}
