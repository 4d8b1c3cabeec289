// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s -mlir-print-op-generic | attn-opt | FileCheck %s

// attn.rope, the alibi mask term, sdpa's softcap and kv_heads, and
// self_attention's grouped-query, rotary and soft-capping attributes survive
// printing and re-parsing.

// CHECK-LABEL: func.func @rope
func.func @rope(%x: tensor<?x?x32xf32>, %p: tensor<?xi32>, %pb: tensor<?x?xi32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  // CHECK: attn.rope %{{.*}}, %{{.*}} style({{ ?}}half) {head_dim = 8 : i64, theta = 1.000000e+04 : f32} : (tensor<?x?x32xf32>, tensor<?xi32>) -> tensor<?x?x32xf32>
  %a = attn.rope %x, %p style(half) {head_dim = 8 : i64, theta = 1.0e4 : f32}
      : (tensor<?x?x32xf32>, tensor<?xi32>) -> tensor<?x?x32xf32>
  // CHECK: attn.rope %{{.*}}, %{{.*}} style({{ ?}}interleaved) {head_dim = 4 : i64, theta = 5.000000e+02 : f32} : (tensor<?x?x32xf32>, tensor<?x?xi32>) -> tensor<?x?x32xf32>
  %b = attn.rope %x, %pb style(interleaved) {head_dim = 4 : i64, theta = 500.0 : f32}
      : (tensor<?x?x32xf32>, tensor<?x?xi32>) -> tensor<?x?x32xf32>
  return %a, %b : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// CHECK-LABEL: func.func @sdpa
func.func @sdpa(%q: tensor<?x?x32xf32>, %kv: tensor<?x?x8xf32>) -> tensor<?x?x32xf32> {
  // CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} heads(4) mask<causal, window(3, 0), alibi> {kv_heads = 1 : i64, scale = 1.250000e-01 : f32, softcap = 5.000000e+01 : f32}
  %o = attn.sdpa %q, %kv, %kv heads(4) mask<alibi, causal, window(3, 0)>
      {kv_heads = 1 : i64, scale = 0.125 : f32, softcap = 50.0 : f32}
      : tensor<?x?x32xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}

// CHECK-LABEL: func.func @self_attention
func.func @self_attention(%x: tensor<?x?x32xf32>, %wq: tensor<32x32xf32>, %wkv: tensor<8x32xf32>,
                          %wqkv: tensor<48x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  // CHECK: attn.self_attention %{{.*}} heads(4) kv_heads(1) mask<causal> rope({{ ?}}interleaved) q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) out(%{{.*}}) {rope_theta = 5.000000e+02 : f32}
  %a = attn.self_attention %x heads(4) kv_heads(1) mask<causal> rope(interleaved)
      q(%wq) k(%wkv) v(%wkv) out(%wq) {rope_theta = 500.0 : f32}
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  // CHECK: attn.self_attention %{{.*}} heads(4) kv_heads(1) mask<alibi> qkv(%{{.*}}) out(%{{.*}}) {softcap = 3.000000e+01 : f32}
  %b = attn.self_attention %x heads(4) kv_heads(1) mask<alibi> qkv(%wqkv) out(%wq) {softcap = 30.0 : f32}
      : (tensor<?x?x32xf32>, tensor<48x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %a, %b : tensor<?x?x32xf32>, tensor<?x?x32xf32>
}
