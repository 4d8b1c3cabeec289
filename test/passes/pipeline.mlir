// RUN: attn-opt %s -split-input-file -attn-pipeline | FileCheck %s
// RUN: attn-opt %s -split-input-file -attn-pipeline -attn-check-shapes | FileCheck %s --check-prefix=KERNELS

// KERNELS-LABEL: func.func @gpt2_block
// KERNELS-COUNT-7: attn.kernel @k
// KERNELS-NOT: attn.kernel
// KERNELS-LABEL: func.func @bert_layer
// KERNELS-COUNT-7: attn.kernel @k
// KERNELS-NOT: attn.kernel

// GPT-2 (pre-LN): Conv1D weights stored [in, out], transposed by the frontend;
// packed QKV; causal mask.
// CHECK-LABEL: func.func @gpt2_block
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]})
// CHECK-DAG: %[[G1:.*]] = attn.weight "h.0.ln_1.weight" : tensor<8xf32>
// CHECK-DAG: %[[B1:.*]] = attn.weight "h.0.ln_1.bias" : tensor<8xf32>
// CHECK: %[[N1:.*]] = attn.kernel @k0_layer_norm(%[[X]], %[[G1]], %[[B1]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   attn.layer_norm
// CHECK-NEXT:   attn.yield
// CHECK-NEXT: }
// The QKV weight expression: the stored [8, 24] weight seen as [24, 8] rows,
// sliced, the query rows scaled by 1/sqrt(4), joined again and read [in, out].
// CHECK-DAG: %[[W:.*]] = attn.weight "h.0.attn.c_attn.weight" : tensor<8x24xf32>
// CHECK-DAG: %[[B:.*]] = attn.weight "h.0.attn.c_attn.bias" : tensor<24xf32>
// CHECK-DAG: %[[WO:.*]] = attn.weight "h.0.attn.c_proj.weight" : tensor<8x8xf32>
// CHECK-DAG: %[[BO:.*]] = attn.weight "h.0.attn.c_proj.bias" : tensor<8xf32>
// CHECK-DAG: %[[WT:.*]] = attn.transpose %[[W]] : tensor<8x24xf32> -> tensor<24x8xf32>
// CHECK-DAG: %[[WQ:.*]] = attn.slice %[[WT]] {dim = 0 : i64, offset = 0 : i64, size = 8 : i64}
// CHECK-DAG: %[[WK:.*]] = attn.slice %[[WT]] {dim = 0 : i64, offset = 8 : i64, size = 8 : i64}
// CHECK-DAG: %[[WV:.*]] = attn.slice %[[WT]] {dim = 0 : i64, offset = 16 : i64, size = 8 : i64}
// CHECK-DAG: %[[BQ:.*]] = attn.slice %[[B]] {dim = 0 : i64, offset = 0 : i64, size = 8 : i64}
// CHECK-DAG: %[[BK:.*]] = attn.slice %[[B]] {dim = 0 : i64, offset = 8 : i64, size = 8 : i64}
// CHECK-DAG: %[[BV:.*]] = attn.slice %[[B]] {dim = 0 : i64, offset = 16 : i64, size = 8 : i64}
// CHECK-DAG: %[[SWQ:.*]] = attn.scale %[[WQ]] {factor = 5.000000e-01 : f32}
// CHECK-DAG: %[[SBQ:.*]] = attn.scale %[[BQ]] {factor = 5.000000e-01 : f32}
// CHECK-DAG: %[[WC:.*]] = attn.concat %[[SWQ]], %[[WK]], %[[WV]] {dim = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32> -> tensor<24x8xf32>
// CHECK-DAG: %[[BC:.*]] = attn.concat %[[SBQ]], %[[BK]], %[[BV]] {dim = 0 : i64} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<24xf32>
// CHECK-DAG: %[[WP:.*]] = attn.transpose %[[WC]] : tensor<24x8xf32> -> tensor<8x24xf32>
// One GEMM for Q, K and V.
// CHECK: %[[QKV:.*]] = attn.kernel @k1_linear(%[[N1]], %[[WP]], %[[BC]]) : (tensor<?x?x8xf32>, tensor<8x24xf32>, tensor<24xf32>) -> tensor<?x?x24xf32> {
// CHECK-NEXT: ^bb0(%[[A0:[^:]*]]: tensor<?x?x8xf32>, %[[A1:[^:]*]]: tensor<8x24xf32>, %[[A2:[^:]*]]: tensor<24xf32>):
// CHECK-NEXT:   %[[L:.*]] = attn.linear %[[A0]], %[[A1]], %[[A2]] layout({{ ?}}in_out) : (tensor<?x?x8xf32>, tensor<8x24xf32>, tensor<24xf32>) -> tensor<?x?x24xf32>
// CHECK-NEXT:   attn.yield %[[L]]
// CHECK-NEXT: }
// Attention reads Q, K and V in place; the scale is folded away.
// CHECK-NEXT: %[[ATT:.*]] = attn.kernel @k2_sdpa(%[[QKV]]) : (tensor<?x?x24xf32>) -> tensor<?x?x8xf32> {
// CHECK-NEXT: ^bb0(%[[A:[^:]*]]: tensor<?x?x24xf32>):
// CHECK-NEXT:   %[[Q:.*]] = attn.slice %[[A]] {dim = 2 : i64, offset = 0 : i64, size = 8 : i64}
// CHECK-NEXT:   %[[K:.*]] = attn.slice %[[A]] {dim = 2 : i64, offset = 8 : i64, size = 8 : i64}
// CHECK-NEXT:   %[[V:.*]] = attn.slice %[[A]] {dim = 2 : i64, offset = 16 : i64, size = 8 : i64}
// CHECK-NEXT:   %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(2) mask<causal> {scale = 1.000000e+00 : f32}
// CHECK-NEXT:   attn.yield %[[O]]
// CHECK-NEXT: }
// The output projection reads the stored [in, out] weight, no transpose left,
// with the residual add as its epilogue.
// CHECK-NEXT: %[[R1:.*]] = attn.kernel @k3_linear_add(%[[ATT]], %[[X]], %[[WO]], %[[BO]])
// CHECK-NEXT: ^bb0(%[[C0:[^:]*]]: tensor<?x?x8xf32>, %[[C1:[^:]*]]: tensor<?x?x8xf32>, %[[C2:[^:]*]]: tensor<8x8xf32>, %[[C3:[^:]*]]: tensor<8xf32>):
// CHECK-NEXT:   %[[P:.*]] = attn.linear %[[C0]], %[[C2]], %[[C3]] layout({{ ?}}in_out)
// CHECK-NEXT:   %[[S:.*]] = attn.add %[[C1]], %[[P]]
// CHECK-NEXT:   attn.yield %[[S]]
// CHECK-NEXT: }
// CHECK: %[[N2:.*]] = attn.kernel @k4_layer_norm(%[[R1]],
// CHECK: %[[WFC:.*]] = attn.weight "h.0.mlp.c_fc.weight" : tensor<8x32xf32>
// CHECK-NEXT: %[[BFC:.*]] = attn.weight "h.0.mlp.c_fc.bias" : tensor<32xf32>
// CHECK-NEXT: %[[H:.*]] = attn.kernel @k5_linear_gelu(%[[N2]], %[[WFC]], %[[BFC]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   attn.linear
// CHECK-NEXT:   attn.gelu
// CHECK-NEXT:   attn.yield
// CHECK-NEXT: }
// CHECK: %[[WPR:.*]] = attn.weight "h.0.mlp.c_proj.weight" : tensor<32x8xf32>
// CHECK-NEXT: %[[BPR:.*]] = attn.weight "h.0.mlp.c_proj.bias" : tensor<8xf32>
// CHECK-NEXT: %[[R2:.*]] = attn.kernel @k6_linear_add(%[[H]], %[[R1]], %[[WPR]], %[[BPR]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   attn.linear
// CHECK-NEXT:   attn.add
// CHECK-NEXT:   attn.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R2]]
func.func @gpt2_block(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x8xf32> {
  %g1 = attn.weight "h.0.ln_1.weight" : tensor<8xf32>
  %b1 = attn.weight "h.0.ln_1.bias" : tensor<8xf32>
  %n1 = attn.layer_norm %x, %g1, %b1 {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %w = attn.weight "h.0.attn.c_attn.weight" : tensor<8x24xf32>
  %b = attn.weight "h.0.attn.c_attn.bias" : tensor<24xf32>
  %wt = attn.transpose %w : tensor<8x24xf32> -> tensor<24x8xf32>
  %wo = attn.weight "h.0.attn.c_proj.weight" : tensor<8x8xf32>
  %bo = attn.weight "h.0.attn.c_proj.bias" : tensor<8xf32>
  %wot = attn.transpose %wo : tensor<8x8xf32> -> tensor<8x8xf32>
  %a = attn.self_attention %n1 heads(2) mask<causal> qkv(%wt, %b) out(%wot, %bo) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %r1 = attn.add %x, %a : tensor<?x?x8xf32>
  %g2 = attn.weight "h.0.ln_2.weight" : tensor<8xf32>
  %b2 = attn.weight "h.0.ln_2.bias" : tensor<8xf32>
  %n2 = attn.layer_norm %r1, %g2, %b2 {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %wfc = attn.weight "h.0.mlp.c_fc.weight" : tensor<8x32xf32>
  %bfc = attn.weight "h.0.mlp.c_fc.bias" : tensor<32xf32>
  %wfct = attn.transpose %wfc : tensor<8x32xf32> -> tensor<32x8xf32>
  %h = attn.linear %n2, %wfct, %bfc layout(out_in) : (tensor<?x?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %ge = attn.gelu %h : tensor<?x?x32xf32>
  %wpr = attn.weight "h.0.mlp.c_proj.weight" : tensor<32x8xf32>
  %bpr = attn.weight "h.0.mlp.c_proj.bias" : tensor<8xf32>
  %wprt = attn.transpose %wpr : tensor<32x8xf32> -> tensor<8x32xf32>
  %m = attn.linear %ge, %wprt, %bpr layout(out_in) : (tensor<?x?x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %r2 = attn.add %r1, %m : tensor<?x?x8xf32>
  return %r2 : tensor<?x?x8xf32>
}

// -----

// BERT (post-LN): separate Q, K, V with biases stored [out, in]; no mask.
// CHECK-LABEL: func.func @bert_layer
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x16xf32> {attn.dim_symbols = ["B", "S"]})
// CHECK-DAG: %[[WQ:.*]] = attn.weight "attention.self.query.weight"
// CHECK-DAG: %[[BQ:.*]] = attn.weight "attention.self.query.bias"
// CHECK-DAG: %[[WK:.*]] = attn.weight "attention.self.key.weight"
// CHECK-DAG: %[[BK:.*]] = attn.weight "attention.self.key.bias"
// CHECK-DAG: %[[WV:.*]] = attn.weight "attention.self.value.weight"
// CHECK-DAG: %[[BV:.*]] = attn.weight "attention.self.value.bias"
// CHECK-DAG: %[[WO:.*]] = attn.weight "attention.output.dense.weight"
// CHECK-DAG: %[[BO:.*]] = attn.weight "attention.output.dense.bias"
// 16 features, 4 heads: the query is scaled by 1/sqrt(4).
// CHECK-DAG: %[[SWQ:.*]] = attn.scale %[[WQ]] {factor = 5.000000e-01 : f32} : tensor<16x16xf32>
// CHECK-DAG: %[[SBQ:.*]] = attn.scale %[[BQ]] {factor = 5.000000e-01 : f32} : tensor<16xf32>
// CHECK-DAG: %[[WC:.*]] = attn.concat %[[SWQ]], %[[WK]], %[[WV]] {dim = 0 : i64} : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32> -> tensor<48x16xf32>
// CHECK-DAG: %[[BC:.*]] = attn.concat %[[SBQ]], %[[BK]], %[[BV]] {dim = 0 : i64} : tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<48xf32>
// CHECK-DAG: %[[WP:.*]] = attn.transpose %[[WC]] : tensor<48x16xf32> -> tensor<16x48xf32>
// CHECK: %[[QKV:.*]] = attn.kernel @k0_linear(%[[X]], %[[WP]], %[[BC]]) : (tensor<?x?x16xf32>, tensor<16x48xf32>, tensor<48xf32>) -> tensor<?x?x48xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   attn.linear {{.*}} layout({{ ?}}in_out)
// CHECK-NEXT:   attn.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[ATT:.*]] = attn.kernel @k1_sdpa(%[[QKV]]) : (tensor<?x?x48xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   attn.slice {{.*}} {dim = 2 : i64, offset = 0 : i64, size = 16 : i64}
// CHECK-NEXT:   attn.slice {{.*}} {dim = 2 : i64, offset = 16 : i64, size = 16 : i64}
// CHECK-NEXT:   attn.slice {{.*}} {dim = 2 : i64, offset = 32 : i64, size = 16 : i64}
// CHECK-NEXT:   attn.sdpa {{.*}} heads(4) mask<none> {scale = 1.000000e+00 : f32}
// CHECK-NEXT:   attn.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[WOT:.*]] = attn.transpose %[[WO]] : tensor<16x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %[[R1:.*]] = attn.kernel @k2_linear_add(%[[ATT]], %[[X]], %[[WOT]], %[[BO]])
// CHECK: %[[N1:.*]] = attn.kernel @k3_layer_norm(%[[R1]],
// CHECK: %[[WI:.*]] = attn.weight "intermediate.dense.weight" : tensor<64x16xf32>
// CHECK-NEXT: %[[BI:.*]] = attn.weight "intermediate.dense.bias" : tensor<64xf32>
// CHECK-NEXT: %[[WIT:.*]] = attn.transpose %[[WI]] : tensor<64x16xf32> -> tensor<16x64xf32>
// CHECK-NEXT: %[[H:.*]] = attn.kernel @k4_linear_gelu(%[[N1]], %[[WIT]], %[[BI]])
// CHECK: %[[R2:.*]] = attn.kernel @k5_linear_add(%[[H]], %[[N1]],
// CHECK: %[[N2:.*]] = attn.kernel @k6_layer_norm(%[[R2]],
// CHECK: return %[[N2]]
func.func @bert_layer(%x: tensor<?x?x16xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x16xf32> {
  %wq = attn.weight "attention.self.query.weight" : tensor<16x16xf32>
  %bq = attn.weight "attention.self.query.bias" : tensor<16xf32>
  %wk = attn.weight "attention.self.key.weight" : tensor<16x16xf32>
  %bk = attn.weight "attention.self.key.bias" : tensor<16xf32>
  %wv = attn.weight "attention.self.value.weight" : tensor<16x16xf32>
  %bv = attn.weight "attention.self.value.bias" : tensor<16xf32>
  %wo = attn.weight "attention.output.dense.weight" : tensor<16x16xf32>
  %bo = attn.weight "attention.output.dense.bias" : tensor<16xf32>
  %a = attn.self_attention %x heads(4) mask<none> q(%wq, %bq) k(%wk, %bk) v(%wv, %bv) out(%wo, %bo) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %r1 = attn.add %a, %x : tensor<?x?x16xf32>
  %g1 = attn.weight "attention.output.LayerNorm.weight" : tensor<16xf32>
  %b1 = attn.weight "attention.output.LayerNorm.bias" : tensor<16xf32>
  %n1 = attn.layer_norm %r1, %g1, %b1 {epsilon = 1.0e-12 : f32} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %wi = attn.weight "intermediate.dense.weight" : tensor<64x16xf32>
  %bi = attn.weight "intermediate.dense.bias" : tensor<64xf32>
  %h = attn.linear %n1, %wi, %bi layout(out_in) : (tensor<?x?x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %ge = attn.gelu %h : tensor<?x?x64xf32>
  %wout = attn.weight "output.dense.weight" : tensor<16x64xf32>
  %bout = attn.weight "output.dense.bias" : tensor<16xf32>
  %m = attn.linear %ge, %wout, %bout layout(out_in) : (tensor<?x?x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %r2 = attn.add %m, %n1 : tensor<?x?x16xf32>
  %g2 = attn.weight "output.LayerNorm.weight" : tensor<16xf32>
  %b2 = attn.weight "output.LayerNorm.bias" : tensor<16xf32>
  %n2 = attn.layer_norm %r2, %g2, %b2 {epsilon = 1.0e-12 : f32} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %n2 : tensor<?x?x16xf32>
}

// -----

// With scale 1 nothing is folded into the query rows, so slicing the packed
// weight, joining the slices and transposing twice all cancel: the QKV GEMM
// reads the stored [in, out] c_attn weight and bias, never moved.
// CHECK-LABEL: func.func @gpt2_unscaled
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]})
// CHECK-NEXT: %[[W:.*]] = attn.weight "c_attn.weight" : tensor<8x24xf32>
// CHECK-NEXT: %[[B:.*]] = attn.weight "c_attn.bias" : tensor<24xf32>
// CHECK-NEXT: %[[WO:.*]] = attn.weight "c_proj.weight" : tensor<8x8xf32>
// CHECK-NEXT: %[[QKV:.*]] = attn.kernel @k0_linear(%[[X]], %[[W]], %[[B]]) : (tensor<?x?x8xf32>, tensor<8x24xf32>, tensor<24xf32>) -> tensor<?x?x24xf32>
// CHECK: %[[ATT:.*]] = attn.kernel @k1_sdpa(%[[QKV]])
// CHECK: attn.sdpa {{.*}} heads(2) mask<causal> {scale = 1.000000e+00 : f32}
// CHECK: %[[Y:.*]] = attn.kernel @k2_linear(%[[ATT]], %[[WO]])
// CHECK-NOT: attn.transpose
// CHECK-NOT: attn.concat
// CHECK: return %[[Y]]
// KERNELS-LABEL: func.func @gpt2_unscaled
// KERNELS-COUNT-3: attn.kernel @k
// KERNELS-NOT: attn.kernel
func.func @gpt2_unscaled(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x8xf32> {
  %w = attn.weight "c_attn.weight" : tensor<8x24xf32>
  %b = attn.weight "c_attn.bias" : tensor<24xf32>
  %wt = attn.transpose %w : tensor<8x24xf32> -> tensor<24x8xf32>
  %wo = attn.weight "c_proj.weight" : tensor<8x8xf32>
  %wot = attn.transpose %wo : tensor<8x8xf32> -> tensor<8x8xf32>
  %a = attn.self_attention %x heads(2) mask<causal> qkv(%wt, %b) out(%wot) {scale = 1.0 : f32}
      : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}
