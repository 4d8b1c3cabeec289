// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s -mlir-print-op-generic | attn-opt | FileCheck %s

// Every attn op survives printing and re-parsing.

// A quantized matrix says how its file stores it.
// CHECK-LABEL: func.func @quantized_weight
func.func @quantized_weight() -> tensor<8x8xi8> {
  // CHECK-NEXT: attn.weight "q.weight" layout({{ ?}}in_out) : tensor<8x8xi8>
  %q = attn.weight "q.weight" layout(in_out) : tensor<8x8xi8>
  return %q : tensor<8x8xi8>
}

// CHECK-LABEL: func.func @weights
func.func @weights() -> (tensor<16x8xf32>, tensor<8x16xf32>, tensor<32x8xf32>,
                          tensor<4x8xf32>, tensor<16x8xf32>) {
  // CHECK-NEXT: %[[W:.*]] = attn.weight "fc.weight" : tensor<16x8xf32>
  %w = attn.weight "fc.weight" : tensor<16x8xf32>
  // CHECK-NEXT: %[[T:.*]] = attn.transpose %[[W]] : tensor<16x8xf32> -> tensor<8x16xf32>
  %t = attn.transpose %w : tensor<16x8xf32> -> tensor<8x16xf32>
  // CHECK-NEXT: %[[C:.*]] = attn.concat %[[W]], %[[W]] {dim = 0 : i64} : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  %c = attn.concat %w, %w {dim = 0 : i64} : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<32x8xf32>
  // CHECK-NEXT: %[[S:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 4 : i64, size = 4 : i64} : tensor<16x8xf32> -> tensor<4x8xf32>
  %s = attn.slice %w {dim = 0 : i64, offset = 4 : i64, size = 4 : i64} : tensor<16x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %[[SC:.*]] = attn.scale %[[W]] {factor = 1.250000e-01 : f32} : tensor<16x8xf32>
  %sc = attn.scale %w {factor = 0.125 : f32} : tensor<16x8xf32>
  // CHECK-NEXT: return %[[W]], %[[T]], %[[C]], %[[S]], %[[SC]]
  return %w, %t, %c, %s, %sc : tensor<16x8xf32>, tensor<8x16xf32>, tensor<32x8xf32>, tensor<4x8xf32>, tensor<16x8xf32>
}

// 4-bit weights: ui8 bytes of two inputs (an [out, in] matrix of 64 inputs is
// 16x32xui8), scales per group of inputs in the weight's layout.
// CHECK-LABEL: func.func @linear_four_bit
func.func @linear_four_bit(%x: tensor<?x64xf32>, %w: tensor<16x32xui8>,
                           %s: tensor<16x2xf32>, %wt: tensor<32x16xui8>,
                           %st: tensor<4x16xf32>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  // CHECK: attn.linear %{{.*}}, %{{.*}} scales %{{.*}} layout({{ ?}}out_in) : (tensor<?x64xf32>, tensor<16x32xui8>, tensor<16x2xf32>) -> tensor<?x16xf32>
  %a = attn.linear %x, %w scales %s layout(out_in) : (tensor<?x64xf32>, tensor<16x32xui8>, tensor<16x2xf32>) -> tensor<?x16xf32>
  // CHECK-NEXT: attn.linear %{{.*}}, %{{.*}} scales %{{.*}} layout({{ ?}}in_out) : (tensor<?x64xf32>, tensor<32x16xui8>, tensor<4x16xf32>) -> tensor<?x16xf32>
  %b = attn.linear %x, %wt scales %st layout(in_out) : (tensor<?x64xf32>, tensor<32x16xui8>, tensor<4x16xf32>) -> tensor<?x16xf32>
  return %a, %b : tensor<?x16xf32>, tensor<?x16xf32>
}

// CHECK-LABEL: func.func @model_ops
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}
func.func @model_ops(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]},
                     %w: tensor<16x8xf32>, %wt: tensor<8x16xf32>, %b: tensor<16xf32>,
                     %g: tensor<8xf32>, %be: tensor<8xf32>,
                     %wq: tensor<16x8xi8>, %sq: tensor<16xf32>)
    -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  // CHECK: %[[L:.*]] = attn.linear %[[X]], %{{.*}}, %{{.*}} layout({{ ?}}out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %l = attn.linear %x, %w, %b layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  // CHECK-NEXT: %[[LQ:.*]] = attn.linear %[[X]], %{{.*}}, %{{.*}} scales %{{.*}} layout({{ ?}}out_in) : (tensor<?x?x8xf32>, tensor<16x8xi8>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %lq = attn.linear %x, %wq, %b scales %sq layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xi8>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  // CHECK-NEXT: %[[L2:.*]] = attn.linear %[[X]], %{{.*}} layout({{ ?}}in_out) : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %l2 = attn.linear %x, %wt layout(in_out) : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  // CHECK-NEXT: %[[G:.*]] = attn.gelu %[[L]] : tensor<?x?x16xf32>
  %ge = attn.gelu %l : tensor<?x?x16xf32>
  // CHECK-NEXT: %[[R:.*]] = attn.relu %[[L2]] : tensor<?x?x16xf32>
  %r = attn.relu %l2 : tensor<?x?x16xf32>
  // CHECK-NEXT: %[[A:.*]] = attn.add %[[X]], %[[X]] : tensor<?x?x8xf32>
  %a = attn.add %x, %x : tensor<?x?x8xf32>
  // CHECK-NEXT: %[[N:.*]] = attn.layer_norm %[[A]], %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %n = attn.layer_norm %a, %g, %be {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  // CHECK-NEXT: return %[[G]], %[[R]], %[[N]]
  return %ge, %r, %n : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @gated_unit
func.func @gated_unit(%x: tensor<?x?x8xf32>, %wg: tensor<4x8xf32>, %wu: tensor<4x8xf32>) -> tensor<?x?x4xf32> {
  // CHECK-NEXT: %[[W:.*]] = attn.interleave %{{.*}}, %{{.*}} {dim = 0 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %w = attn.interleave %wg, %wu {dim = 0 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  // CHECK-NEXT: %[[GU:.*]] = attn.linear %{{.*}}, %[[W]]
  %gu = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  // CHECK-NEXT: %[[M:.*]] = attn.glu %[[GU]] {activation = "silu"} : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  %m = attn.glu %gu {activation = "silu"} : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  // CHECK-NEXT: return %[[M]]
  return %m : tensor<?x?x4xf32>
}

// CHECK-LABEL: func.func @llm_norm_and_cap
func.func @llm_norm_and_cap(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // CHECK-NEXT: %[[N:.*]] = attn.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32, offset = 1.000000e+00 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %n = attn.rms_norm %x, %g {epsilon = 1.0e-6 : f32, offset = 1.0 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  // CHECK-NEXT: %[[C:.*]] = attn.softcap %[[N]] {cap = 3.000000e+01 : f32} : tensor<?x?x8xf32>
  %c = attn.softcap %n {cap = 30.0 : f32} : tensor<?x?x8xf32>
  // CHECK-NEXT: return %[[C]]
  return %c : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @self_attention_qkv_separate
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[WQ:[^:]*]]: tensor<8x8xf32>, %[[BQ:[^:]*]]: tensor<8xf32>, %[[WK:[^:]*]]: tensor<8x8xf32>, %[[WV:[^:]*]]: tensor<8x8xf32>, %[[BV:[^:]*]]: tensor<8xf32>, %[[WO:[^:]*]]: tensor<8x8xf32>, %[[BO:[^:]*]]: tensor<8xf32>)
func.func @self_attention_qkv_separate(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %bq: tensor<8xf32>,
                                       %wk: tensor<8x8xf32>, %wv: tensor<8x8xf32>, %bv: tensor<8xf32>,
                                       %wo: tensor<8x8xf32>, %bo: tensor<8xf32>) -> tensor<?x?x8xf32> {
  // CHECK-NEXT: %[[A:.*]] = attn.self_attention %[[X]] heads(2) mask<none> q(%[[WQ]], %[[BQ]]) k(%[[WK]]) v(%[[WV]], %[[BV]]) out(%[[WO]], %[[BO]]) {scale = 2.500000e-01 : f32} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %a = attn.self_attention %x heads(2) mask<none> q(%wq, %bq) k(%wk) v(%wv, %bv) out(%wo, %bo) {scale = 0.25 : f32}
      : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  // CHECK-NEXT: return %[[A]]
  return %a : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @self_attention_packed
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[W:[^:]*]]: tensor<24x8xf32>, %[[B:[^:]*]]: tensor<24xf32>, %[[WO:[^:]*]]: tensor<8x8xf32>)
func.func @self_attention_packed(%x: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %b: tensor<24xf32>,
                                 %wo: tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  // CHECK-NEXT: %[[A:.*]] = attn.self_attention %[[X]] heads(4) mask<causal> qkv(%[[W]], %[[B]]) out(%[[WO]]) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %a = attn.self_attention %x heads(4) mask<causal> qkv(%w, %b) out(%wo)
      : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  // CHECK-NEXT: %[[A2:.*]] = attn.self_attention %[[X]] heads(1) mask<none> qkv(%[[W]]) out(%[[WO]]) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %a2 = attn.self_attention %x heads(1) mask<none> qkv(%w) out(%wo)
      : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  // CHECK-NEXT: return %[[A]], %[[A2]]
  return %a, %a2 : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @sdpa
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x?x8xf32>, %[[K:[^:]*]]: tensor<?x?x8xf32>, %[[V:[^:]*]]: tensor<?x?x8xf32>)
func.func @sdpa(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  // CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(2) mask<causal> {scale = 5.000000e-01 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<causal> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  // CHECK-NEXT: %[[O2:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(8) mask<none> {scale = 1.000000e+00 : f32}
  %o2 = attn.sdpa %q, %k, %v heads(8) mask<none> {scale = 1.0 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  // CHECK-NEXT: return %[[O]], %[[O2]]
  return %o, %o2 : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @kernel
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[W:[^:]*]]: tensor<8x16xf32>, %[[B:[^:]*]]: tensor<16xf32>)
func.func @kernel(%x: tensor<?x?x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  // CHECK-NEXT: %[[K:.*]]:2 = attn.kernel @k0_linear_gelu(%[[X]], %[[W]], %[[B]]) : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<?x?x8xf32>, %[[AW:.*]]: tensor<8x16xf32>, %[[AB:.*]]: tensor<16xf32>):
  // CHECK-NEXT:   %[[L:.*]] = attn.linear %[[A]], %[[AW]], %[[AB]] layout({{ ?}}in_out)
  // CHECK-NEXT:   %[[G:.*]] = attn.gelu %[[L]] : tensor<?x?x16xf32>
  // CHECK-NEXT:   attn.yield %[[L]], %[[G]] : tensor<?x?x16xf32>, tensor<?x?x16xf32>
  // CHECK-NEXT: }
  %y:2 = attn.kernel @k0_linear_gelu(%x, %w, %b) : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  ^bb0(%a: tensor<?x?x8xf32>, %aw: tensor<8x16xf32>, %ab: tensor<16xf32>):
    %l = attn.linear %a, %aw, %ab layout(in_out) : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
    %g = attn.gelu %l : tensor<?x?x16xf32>
    attn.yield %l, %g : tensor<?x?x16xf32>, tensor<?x?x16xf32>
  }
  // CHECK-NEXT: return %[[K]]#0, %[[K]]#1
  return %y#0, %y#1 : tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// A kernel without results: the empty yield is implicit.
// CHECK-LABEL: func.func @kernel_no_results
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32>)
func.func @kernel_no_results(%x: tensor<4xf32>) {
  // CHECK-NEXT: attn.kernel @empty(%[[X]]) : (tensor<4xf32>) -> () {
  // CHECK-NEXT: ^bb0(%{{.*}}: tensor<4xf32>):
  // CHECK-NEXT: }
  attn.kernel @empty(%x) : (tensor<4xf32>) -> () {
  ^bb0(%a: tensor<4xf32>):
  }
  return
}

// CHECK-LABEL: func.func @panels
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x8xf32>, %[[W:[^:]*]]: tensor<8x32xf32>)
func.func @panels(%x: tensor<?x8xf32>, %w: tensor<8x32xf32>) -> tensor<?x32xf32> {
  // CHECK-NEXT: %[[P:.*]] = attn.pack_panels %[[W]] {width = 16 : i64} : tensor<8x32xf32> -> tensor<2x8x16xf32>
  %p = attn.pack_panels %w {width = 16 : i64} : tensor<8x32xf32> -> tensor<2x8x16xf32>
  // CHECK-NEXT: attn.linear %[[X]], %[[P]] layout({{ ?}}panels) : (tensor<?x8xf32>, tensor<2x8x16xf32>) -> tensor<?x32xf32>
  %y = attn.linear %x, %p layout(panels) : (tensor<?x8xf32>, tensor<2x8x16xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// The general attention: cross-attention of different lengths, grouped
// key/value heads, key lengths, an additive bias, an additive score, the
// weights result and every mask term.
// CHECK-LABEL: func.func @sdpa_general
func.func @sdpa_general(%q: tensor<?x?x8xf32>, %m: tensor<?x?x4xf32>, %len: tensor<?xi32>,
                        %b: tensor<?x?x?xf32>, %s: tensor<4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x?x?xf32>, tensor<?x?x8xf32>) {
  // CHECK-NEXT: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} heads(2) mask<causal, window(3, *), offset(2)> lengths(%{{.*}} : tensor<?xi32>) bias(%{{.*}} : tensor<?x?x?xf32>) {kv_heads = 1 : i64, scale = 5.000000e-01 : f32} : tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>, tensor<?x2x?x?xf32>
  %o, %w = attn.sdpa %q, %m, %m heads(2) mask<causal, window(3, *), offset(2)> lengths(%len : tensor<?xi32>) bias(%b : tensor<?x?x?xf32>) {kv_heads = 1 : i64, scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>, tensor<?x2x?x?xf32>
  // CHECK-NEXT: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} heads(2) mask<window(*, 0)> score(%{{.*}} : tensor<4xf32>) {scale = 1.000000e+00 : f32}
  %a = attn.sdpa %q, %q, %q heads(2) mask<window(*, 0)> score(%s : tensor<4xf32>) {scale = 1.0 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o, %w, %a : tensor<?x?x8xf32>, tensor<?x2x?x?xf32>, tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @embedding
func.func @embedding(%ids: tensor<?x?xi32>, %wte: tensor<50x8xf32>) -> tensor<?x?x8xf32> {
  // CHECK-NEXT: attn.embedding %{{.*}}, %{{.*}} : (tensor<?x?xi32>, tensor<50x8xf32>) -> tensor<?x?x8xf32>
  %e = attn.embedding %ids, %wte : (tensor<?x?xi32>, tensor<50x8xf32>) -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @embedding_quantized
func.func @embedding_quantized(%ids: tensor<?x?xi32>, %q: tensor<50x8xi8>, %s: tensor<50xf32>, %p: tensor<50x16xui8>, %g: tensor<50x1xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x32xf32>) {
  // CHECK-NEXT: attn.embedding %{{.*}}, %{{.*}} scales %{{.*}} : (tensor<?x?xi32>, tensor<50x8xi8>, tensor<50xf32>) -> tensor<?x?x8xf32>
  %e = attn.embedding %ids, %q scales %s : (tensor<?x?xi32>, tensor<50x8xi8>, tensor<50xf32>) -> tensor<?x?x8xf32>
  // A ui8 table holds two features per byte: 16 bytes, 32 features.
  // CHECK-NEXT: attn.embedding %{{.*}}, %{{.*}} scales %{{.*}} : (tensor<?x?xi32>, tensor<50x16xui8>, tensor<50x1xf32>) -> tensor<?x?x32xf32>
  %f = attn.embedding %ids, %p scales %g : (tensor<?x?xi32>, tensor<50x16xui8>, tensor<50x1xf32>) -> tensor<?x?x32xf32>
  return %e, %f : tensor<?x?x8xf32>, tensor<?x?x32xf32>
}

// CHECK-LABEL: func.func @positions
func.func @positions(%ids: tensor<?x?xi32>) -> tensor<?x?x8xf32> {
  // CHECK-NEXT: %[[P:.*]] = attn.positions %{{.*}} {dim = 1 : i64} : (tensor<?x?xi32>) -> tensor<?xi32>
  %p = attn.positions %ids {dim = 1 : i64} : (tensor<?x?xi32>) -> tensor<?xi32>
  // CHECK-NEXT: attn.sinusoidal %[[P]] : (tensor<?xi32>) -> tensor<?x8xf32>
  %pe = attn.sinusoidal %p : (tensor<?xi32>) -> tensor<?x8xf32>
  // CHECK-NEXT: attn.sinusoidal %{{.*}} : (tensor<?x?xi32>) -> tensor<?x?x8xf32>
  %pi = attn.sinusoidal %ids : (tensor<?x?xi32>) -> tensor<?x?x8xf32>
  return %pi : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @positions_per_sequence
func.func @positions_per_sequence(%ids: tensor<?x?xi32>, %pos: tensor<?xi32>) -> tensor<?x?xi32> {
  // CHECK-NEXT: attn.positions %{{.*}} offset(%{{.*}}) {dim = 1 : i64} : (tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x?xi32>
  %p = attn.positions %ids offset(%pos) {dim = 1 : i64} : (tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x?xi32>
  return %p : tensor<?x?xi32>
}

// CHECK-LABEL: func.func @positions_start
func.func @positions_start(%ids: tensor<?x?xi32>) -> tensor<?xi32> {
  // CHECK-NEXT: attn.positions %{{.*}} {dim = 1 : i64, start = 2 : i64} : (tensor<?x?xi32>) -> tensor<?xi32>
  %p = attn.positions %ids {dim = 1 : i64, start = 2 : i64} : (tensor<?x?xi32>) -> tensor<?xi32>
  return %p : tensor<?xi32>
}

// CHECK-LABEL: func.func @relative_bias
func.func @relative_bias(%x: tensor<?x?x8xf32>, %t: tensor<32x2xf32>) -> tensor<?x2x?x?xf32> {
  // CHECK-NEXT: attn.relative_bias %{{.*}}, %{{.*}} bidirectional {max_distance = 128 : i64} : (tensor<?x?x8xf32>, tensor<32x2xf32>) -> tensor<?x2x?x?xf32>
  %b = attn.relative_bias %x, %t bidirectional {max_distance = 128 : i64} : (tensor<?x?x8xf32>, tensor<32x2xf32>) -> tensor<?x2x?x?xf32>
  // CHECK-NEXT: attn.relative_bias %{{.*}}, %{{.*}} {max_distance = 128 : i64} : (tensor<?x?x8xf32>, tensor<32x2xf32>) -> tensor<?x2x?x?xf32>
  %d = attn.relative_bias %x, %t {max_distance = 128 : i64} : (tensor<?x?x8xf32>, tensor<32x2xf32>) -> tensor<?x2x?x?xf32>
  %s = attn.add %b, %d : tensor<?x2x?x?xf32>
  return %s : tensor<?x2x?x?xf32>
}

// Decoding: the queries at their sequences' offsets, the keys a cache's rows.
// CHECK-LABEL: func.func @relative_bias_over_a_cache
func.func @relative_bias_over_a_cache(%x: tensor<?x?x8xf32>, %t: tensor<32x2xf32>, %pos: tensor<?xi32>, %cache: tensor<?x?x8xf32>) -> tensor<?x2x?x?xf32> {
  // CHECK-NEXT: attn.relative_bias %{{.*}}, %{{.*}} query_offsets(%{{.*}}) keys(%{{.*}}) {max_distance = 128 : i64} : (tensor<?x?x8xf32>, tensor<32x2xf32>, tensor<?xi32>, tensor<?x?x8xf32>) -> tensor<?x2x?x?xf32>
  %b = attn.relative_bias %x, %t query_offsets(%pos) keys(%cache) {max_distance = 128 : i64} : (tensor<?x?x8xf32>, tensor<32x2xf32>, tensor<?xi32>, tensor<?x?x8xf32>) -> tensor<?x2x?x?xf32>
  return %b : tensor<?x2x?x?xf32>
}

// A decode's additive bias runs over the cache's rows, [B, heads, S, L].
// CHECK-LABEL: func.func @self_attention_decode_bias
func.func @self_attention_decode_bias(%x: tensor<?x?x8xf32>, %qkv: tensor<24x8xf32>, %o: tensor<8x8xf32>, %b: tensor<?x2x?x16xf32>, %kc: tensor<?x16x8xf32>, %vc: tensor<?x16x8xf32>, %pos: tensor<?xi32>) -> tensor<?x?x8xf32> {
  // CHECK-NEXT: attn.self_attention %{{.*}} heads(2) mask<causal> qkv(%{{.*}}) out(%{{.*}}) bias(%{{.*}}) key_cache(%{{.*}}) value_cache(%{{.*}}) position(%{{.*}})
  %a = attn.self_attention %x heads(2) mask<causal> qkv(%qkv) out(%o) bias(%b) key_cache(%kc) value_cache(%vc) position(%pos) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8x8xf32>, tensor<?x2x?x16xf32>, tensor<?x16x8xf32>, tensor<?x16x8xf32>, tensor<?xi32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// KV caches in f16 or bf16: rows written from f32, read by the attention.
// CHECK-LABEL: func.func @half_precision_caches
func.func @half_precision_caches(%kc: tensor<?x?x8xf16>, %vc: tensor<?x?x8xbf16>, %k: tensor<?x?x8xf32>, %q: tensor<?x?x8xf32>, %pos: tensor<?xi32>) -> tensor<?x?x8xf32> {
  // CHECK-NEXT: attn.cache_write %{{.*}}, %{{.*}} at(%{{.*}}) : (tensor<?x?x8xf16>, tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x8xf16>
  %keys = attn.cache_write %kc, %k at(%pos) : (tensor<?x?x8xf16>, tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x8xf16>
  // CHECK-NEXT: attn.cache_write %{{.*}}, %{{.*}} at(%{{.*}}) : (tensor<?x?x8xbf16>, tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x8xbf16>
  %values = attn.cache_write %vc, %k at(%pos) : (tensor<?x?x8xbf16>, tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x8xbf16>
  // CHECK-NEXT: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} heads(2) mask<causal> query_offsets(%{{.*}} : tensor<?xi32>) {scale = 5.000000e-01 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf16>, tensor<?x?x8xbf16> -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %keys, %values heads(2) mask<causal> query_offsets(%pos : tensor<?xi32>) {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf16>, tensor<?x?x8xbf16> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// An i8 KV cache: rows quantized per group (kv head) as written, their scales
// into their own state, both read by the attention.
// CHECK-LABEL: func.func @int8_caches
func.func @int8_caches(%kc: tensor<?x?x8xi8>, %ks: tensor<?x?x2xf32>, %k: tensor<?x?x8xf32>, %q: tensor<?x?x8xf32>, %pos: tensor<?xi32>) -> tensor<?x?x8xf32> {
  // CHECK-NEXT: attn.cache_write %{{.*}}, %{{.*}} at(%{{.*}}) {groups = 2 : i64} : (tensor<?x?x8xi8>, tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x8xi8>
  %keys = attn.cache_write %kc, %k at(%pos) {groups = 2 : i64} : (tensor<?x?x8xi8>, tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x8xi8>
  // CHECK-NEXT: attn.cache_write %{{.*}}, %{{.*}} at(%{{.*}}) {groups = 2 : i64, scales} : (tensor<?x?x2xf32>, tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x2xf32>
  %scales = attn.cache_write %ks, %k at(%pos) {groups = 2 : i64, scales} : (tensor<?x?x2xf32>, tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x2xf32>
  // CHECK-NEXT: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} heads(2) mask<causal> query_offsets(%{{.*}} : tensor<?xi32>) key_scale(%{{.*}} : tensor<?x?x2xf32>) value_scale(%{{.*}} : tensor<?x?x2xf32>) {scale = 5.000000e-01 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xi8>, tensor<?x?x8xi8> -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %keys, %keys heads(2) mask<causal> query_offsets(%pos : tensor<?xi32>) key_scale(%scales : tensor<?x?x2xf32>) value_scale(%scales : tensor<?x?x2xf32>) {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xi8>, tensor<?x?x8xi8> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}
