// RUN: attn-opt %s -split-input-file -attn-decompose-attention | FileCheck %s --check-prefix=DECOMPOSE
// RUN: attn-opt %s -split-input-file -attn-decompose-attention -attn-fold-scale -attn-fuse-qkv | FileCheck %s --check-prefix=FUSE
// RUN: attn-opt %s -split-input-file -attn-decompose-attention -attn-fold-scale -attn-fuse-qkv -attn-form-kernels | FileCheck %s --check-prefix=KERNELS

// Grouped-query attention with rotary embeddings: the packed projection is
// cut into Q (16 rows) and K, V (8 rows each, kv_heads = 2 heads of 4);
// queries and keys are rotated at positions 0 .. S-1; the scale folds into
// the query weights through the rotation (it is linear); the projections
// fuse back into one GEMM with the rotations on its slices; the rotations
// and slices are read in place by the attention's kernel.
// DECOMPOSE-LABEL: func.func @gqa_rope
// DECOMPOSE-SAME: (%[[X:[^:]*]]: tensor<?x?x16xf32> {{.*}}, %[[W:[^:]*]]: tensor<32x16xf32>, %[[WO:[^:]*]]: tensor<16x16xf32>)
// DECOMPOSE-NEXT: %[[WQ:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 0 : i64, size = 16 : i64} : tensor<32x16xf32> -> tensor<16x16xf32>
// DECOMPOSE-NEXT: %[[WK:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 16 : i64, size = 8 : i64} : tensor<32x16xf32> -> tensor<8x16xf32>
// DECOMPOSE-NEXT: %[[WV:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 24 : i64, size = 8 : i64} : tensor<32x16xf32> -> tensor<8x16xf32>
// DECOMPOSE-NEXT: %[[Q:.*]] = attn.linear %[[X]], %[[WQ]] layout({{ ?}}out_in)
// DECOMPOSE-NEXT: %[[K:.*]] = attn.linear %[[X]], %[[WK]] layout({{ ?}}out_in)
// DECOMPOSE-NEXT: %[[V:.*]] = attn.linear %[[X]], %[[WV]] layout({{ ?}}out_in)
// DECOMPOSE-NEXT: %[[P:.*]] = attn.positions %[[X]] {dim = 1 : i64} : (tensor<?x?x16xf32>) -> tensor<?xi32>
// DECOMPOSE-NEXT: %[[RQ:.*]] = attn.rope %[[Q]], %[[P]] style({{ ?}}interleaved) {head_dim = 4 : i64, theta = 1.000000e+04 : f32} : (tensor<?x?x16xf32>, tensor<?xi32>) -> tensor<?x?x16xf32>
// DECOMPOSE-NEXT: %[[RK:.*]] = attn.rope %[[K]], %[[P]] style({{ ?}}interleaved) {head_dim = 4 : i64, theta = 1.000000e+04 : f32} : (tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x8xf32>
// DECOMPOSE-NEXT: %[[O:.*]] = attn.sdpa %[[RQ]], %[[RK]], %[[V]] heads(4) mask<causal, alibi> {kv_heads = 2 : i64, scale = 5.000000e-01 : f32, softcap = 5.000000e+01 : f32}
// DECOMPOSE-NEXT: attn.linear %[[O]], %[[WO]] layout({{ ?}}out_in)

// FUSE-LABEL: func.func @gqa_rope
// FUSE-SAME: (%[[X:[^:]*]]: tensor<?x?x16xf32>
// FUSE: %[[S:.*]] = attn.scale %{{.*}} {factor = 5.000000e-01 : f32} : tensor<16x16xf32>
// FUSE: %[[P:.*]] = attn.positions %[[X]]
// FUSE: %[[W:.*]] = attn.concat %[[S]], %{{.*}}, %{{.*}} {dim = 0 : i64} : tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<32x16xf32>
// FUSE-NEXT: %[[QKV:.*]] = attn.linear %[[X]], %[[W]] layout({{ ?}}out_in) : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
// FUSE-NEXT: %[[Q:.*]] = attn.slice %[[QKV]] {dim = 2 : i64, offset = 0 : i64, size = 16 : i64}
// FUSE-NEXT: %[[RQ:.*]] = attn.rope %[[Q]], %[[P]] style({{ ?}}interleaved)
// FUSE-NEXT: %[[K:.*]] = attn.slice %[[QKV]] {dim = 2 : i64, offset = 16 : i64, size = 8 : i64}
// FUSE-NEXT: %[[RK:.*]] = attn.rope %[[K]], %[[P]] style({{ ?}}interleaved)
// FUSE-NEXT: %[[V:.*]] = attn.slice %[[QKV]] {dim = 2 : i64, offset = 24 : i64, size = 8 : i64}
// FUSE-NEXT: attn.sdpa %[[RQ]], %[[RK]], %[[V]] heads(4) mask<causal, alibi> {kv_heads = 2 : i64, scale = 1.000000e+00 : f32, softcap = 5.000000e+01 : f32}
// FUSE-NOT: attn.rope

// KERNELS-LABEL: func.func @gqa_rope
// KERNELS: attn.kernel @{{k[0-9]+}}_positions(
// KERNELS: attn.kernel @{{k[0-9]+}}_linear(
// KERNELS: attn.kernel @{{k[0-9]+}}_sdpa(
// KERNELS-NEXT: ^bb0(%[[QKV:[^:]*]]: tensor<?x?x32xf32>, %[[P:[^:]*]]: tensor<?xi32>):
// KERNELS-NEXT: %[[Q:.*]] = attn.slice %[[QKV]]
// KERNELS-NEXT: %[[RQ:.*]] = attn.rope %[[Q]], %[[P]]
// KERNELS-NEXT: %[[K:.*]] = attn.slice %[[QKV]]
// KERNELS-NEXT: %[[RK:.*]] = attn.rope %[[K]], %[[P]]
// KERNELS-NEXT: %[[V:.*]] = attn.slice %[[QKV]]
// KERNELS-NEXT: %[[O:.*]] = attn.sdpa %[[RQ]], %[[RK]], %[[V]]
// KERNELS-NEXT: attn.yield %[[O]]
func.func @gqa_rope(%x: tensor<?x?x16xf32> {attn.dim_symbols = ["B", "S"]}, %w: tensor<32x16xf32>,
                    %wo: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  %a = attn.self_attention %x heads(4) kv_heads(2) mask<causal, alibi> rope(interleaved)
      qkv(%w) out(%wo) {softcap = 50.0 : f32}
      : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %a : tensor<?x?x16xf32>
}

// -----

// A rotation whose result is also read elsewhere is not moved: the
// projections stay apart and the rotation is a kernel of its own.
// FUSE-LABEL: func.func @shared_rope
// FUSE-NOT: attn.concat
// KERNELS-LABEL: func.func @shared_rope
// KERNELS: attn.kernel @{{k[0-9]+}}_rope(
func.func @shared_rope(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}, %p: tensor<?xi32> {attn.dim_symbols = ["S"]},
                       %wq: tensor<8x8xf32>, %wk: tensor<8x8xf32>, %wv: tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %x, %wq layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %wk layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %x, %wv layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %rq = attn.rope %q, %p style(half) {head_dim = 4 : i64, theta = 1.0e4 : f32} : (tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x8xf32>
  %rk = attn.rope %k, %p style(half) {head_dim = 4 : i64, theta = 1.0e4 : f32} : (tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %rq, %rk, %v heads(2) mask<causal> {scale = 1.0 : f32}
      : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o, %rk : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
