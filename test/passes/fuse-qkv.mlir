// RUN: attn-opt %s -split-input-file -attn-fuse-qkv | FileCheck %s

// [out, in] weights are joined along dim 0, biases along dim 0; the fused
// output is split back on the last dim.
// CHECK-LABEL: func.func @out_in_with_biases
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[WQ:[^:]*]]: tensor<8x8xf32>, %[[BQ:[^:]*]]: tensor<8xf32>, %[[WK:[^:]*]]: tensor<8x8xf32>, %[[BK:[^:]*]]: tensor<8xf32>, %[[WV:[^:]*]]: tensor<8x8xf32>, %[[BV:[^:]*]]: tensor<8xf32>)
// CHECK-NEXT: %[[W:.*]] = attn.concat %[[WQ]], %[[WK]], %[[WV]] {dim = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32> -> tensor<24x8xf32>
// CHECK-NEXT: %[[B:.*]] = attn.concat %[[BQ]], %[[BK]], %[[BV]] {dim = 0 : i64} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<24xf32>
// CHECK-NEXT: %[[QKV:.*]] = attn.linear %[[X]], %[[W]], %[[B]] layout({{ ?}}out_in) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<?x?x24xf32>
// CHECK-NEXT: %[[Q:.*]] = attn.slice %[[QKV]] {dim = 2 : i64, offset = 0 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
// CHECK-NEXT: %[[K:.*]] = attn.slice %[[QKV]] {dim = 2 : i64, offset = 8 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
// CHECK-NEXT: %[[V:.*]] = attn.slice %[[QKV]] {dim = 2 : i64, offset = 16 : i64, size = 8 : i64} : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(2) mask<causal> {scale = 5.000000e-01 : f32}
// CHECK-NEXT: return %[[O]]
func.func @out_in_with_biases(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %bq: tensor<8xf32>, %wk: tensor<8x8xf32>,
                              %bk: tensor<8xf32>, %wv: tensor<8x8xf32>, %bv: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %q = attn.linear %x, %wq, %bq layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %wk, %bk layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %x, %wv, %bv layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<causal> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// [in, out] weights are joined along dim 1; no biases, no bias concat. A
// rank-2 activation is sliced on dim 1.
// CHECK-LABEL: func.func @in_out_without_biases
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x16xf32>, %[[WQ:[^:]*]]: tensor<16x16xf32>, %[[WK:[^:]*]]: tensor<16x16xf32>, %[[WV:[^:]*]]: tensor<16x16xf32>)
// CHECK-NEXT: %[[W:.*]] = attn.concat %[[WQ]], %[[WK]], %[[WV]] {dim = 1 : i64} : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x48xf32>
// CHECK-NEXT: %[[QKV:.*]] = attn.linear %[[X]], %[[W]] layout({{ ?}}in_out) : (tensor<?x16xf32>, tensor<16x48xf32>) -> tensor<?x48xf32>
// CHECK-NEXT: %[[Q:.*]] = attn.slice %[[QKV]] {dim = 1 : i64, offset = 0 : i64, size = 16 : i64} : tensor<?x48xf32> -> tensor<?x16xf32>
// CHECK-NEXT: %[[K:.*]] = attn.slice %[[QKV]] {dim = 1 : i64, offset = 16 : i64, size = 16 : i64}
// CHECK-NEXT: %[[V:.*]] = attn.slice %[[QKV]] {dim = 1 : i64, offset = 32 : i64, size = 16 : i64}
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(4) mask<none> {scale = 1.000000e+00 : f32}
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: attn.concat
func.func @in_out_without_biases(%x: tensor<?x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x16xf32>, %wv: tensor<16x16xf32>) -> tensor<?x16xf32> {
  %q = attn.linear %x, %wq layout(in_out) : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %k = attn.linear %x, %wk layout(in_out) : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %v = attn.linear %x, %wv layout(in_out) : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %o = attn.sdpa %q, %k, %v heads(4) mask<none> {scale = 1.0 : f32} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return %o : tensor<?x16xf32>
}

// -----

// Projections whose in and out features differ (d_model 8 -> 4 per projection).
// CHECK-LABEL: func.func @narrow_projections
// CHECK: attn.concat {{.*}} {dim = 0 : i64} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<12x8xf32>
// CHECK: attn.linear {{.*}} -> tensor<?x?x12xf32>
// CHECK: attn.slice {{.*}} {dim = 2 : i64, offset = 0 : i64, size = 4 : i64}
// CHECK: attn.slice {{.*}} {dim = 2 : i64, offset = 4 : i64, size = 4 : i64}
// CHECK: attn.slice {{.*}} {dim = 2 : i64, offset = 8 : i64, size = 4 : i64}
func.func @narrow_projections(%x: tensor<?x?x8xf32>, %wq: tensor<4x8xf32>, %wk: tensor<4x8xf32>, %wv: tensor<4x8xf32>) -> tensor<?x?x4xf32> {
  %q = attn.linear %x, %wq layout(out_in) : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  %k = attn.linear %x, %wk layout(out_in) : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  %v = attn.linear %x, %wv layout(out_in) : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  return %o : tensor<?x?x4xf32>
}

// -----

// Cross attention: the key and value read another input (the memory). They
// become one GEMM of their own; the query stays apart.
// CHECK-LABEL: func.func @different_inputs
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[Y:[^:]*]]: tensor<?x?x8xf32>, %[[W:[^:]*]]: tensor<8x8xf32>)
// CHECK: %[[Q:.*]] = attn.linear %[[X]], %[[W]]
// CHECK-NEXT: %[[WKV:.*]] = attn.concat %[[W]], %[[W]] {dim = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[KV:.*]] = attn.linear %[[Y]], %[[WKV]] {{.*}} -> tensor<?x?x16xf32>
// CHECK-NEXT: %[[K:.*]] = attn.slice %[[KV]] {dim = 2 : i64, offset = 0 : i64, size = 8 : i64}
// CHECK-NEXT: %[[V:.*]] = attn.slice %[[KV]] {dim = 2 : i64, offset = 8 : i64, size = 8 : i64}
// CHECK-NEXT: attn.sdpa %[[Q]], %[[K]], %[[V]]
func.func @different_inputs(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %q = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %y, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %y, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// Only the query and value have biases: not fused (no bias concat can be formed).
// CHECK-LABEL: func.func @mixed_bias_presence
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[W:[^:]*]]: tensor<8x8xf32>, %[[B:[^:]*]]: tensor<8xf32>)
// CHECK-NOT: attn.concat
// CHECK: %[[Q:.*]] = attn.linear %[[X]], %[[W]], %[[B]]
// CHECK-NEXT: %[[K:.*]] = attn.linear %[[X]], %[[W]] layout
// CHECK-NEXT: %[[V:.*]] = attn.linear %[[X]], %[[W]], %[[B]]
// CHECK-NEXT: attn.sdpa %[[Q]], %[[K]], %[[V]]
// CHECK-NOT: attn.slice
func.func @mixed_bias_presence(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %q = attn.linear %x, %w, %b layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %x, %w, %b layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// The projections store their weights in different layouts: not fused.
// CHECK-LABEL: func.func @mixed_layouts
// CHECK-NOT: attn.concat
// CHECK: attn.linear {{.*}} layout({{ ?}}out_in)
// CHECK-NEXT: attn.linear {{.*}} layout({{ ?}}in_out)
// CHECK-NEXT: attn.linear {{.*}} layout({{ ?}}out_in)
// CHECK-NEXT: attn.sdpa
func.func @mixed_layouts(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %q = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %w layout(in_out) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// The value projection is also returned: fusing would have to keep it alive.
// CHECK-LABEL: func.func @projection_with_another_use
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[W:[^:]*]]: tensor<8x8xf32>)
// CHECK-NOT: attn.concat
// CHECK: %[[Q:.*]] = attn.linear %[[X]], %[[W]]
// CHECK-NEXT: %[[K:.*]] = attn.linear %[[X]], %[[W]]
// CHECK-NEXT: %[[V:.*]] = attn.linear %[[X]], %[[W]]
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]]
// CHECK-NEXT: return %[[O]], %[[V]]
func.func @projection_with_another_use(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o, %v : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// One projection serves as key and value (two uses): not fused.
// CHECK-LABEL: func.func @shared_key_value
// CHECK-NOT: attn.concat
// CHECK: %[[Q:.*]] = attn.linear
// CHECK-NEXT: %[[KV:.*]] = attn.linear
// CHECK-NEXT: attn.sdpa %[[Q]], %[[KV]], %[[KV]]
func.func @shared_key_value(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %q = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %kv = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %kv, %kv heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// The key is not a projection.
// CHECK-LABEL: func.func @key_not_a_projection
// CHECK-NOT: attn.concat
// CHECK: attn.sdpa
func.func @key_not_a_projection(%x: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %q = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// Weight expressions (scaled query, sliced packed weight) are concatenated as
// they are.
// CHECK-LABEL: func.func @weight_expressions
// CHECK: %[[W:.*]] = attn.weight "qkv" : tensor<24x8xf32>
// CHECK: %[[WQ:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 0 : i64, size = 8 : i64}
// CHECK: %[[WK:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 8 : i64, size = 8 : i64}
// CHECK: %[[WV:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 16 : i64, size = 8 : i64}
// CHECK: %[[SQ:.*]] = attn.scale %[[WQ]]
// CHECK: %[[C:.*]] = attn.concat %[[SQ]], %[[WK]], %[[WV]] {dim = 0 : i64}
// CHECK: attn.linear %{{.*}}, %[[C]] layout({{ ?}}out_in)
func.func @weight_expressions(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %w = attn.weight "qkv" : tensor<24x8xf32>
  %wq = attn.slice %w {dim = 0 : i64, offset = 0 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %wk = attn.slice %w {dim = 0 : i64, offset = 8 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %wv = attn.slice %w {dim = 0 : i64, offset = 16 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %sq = attn.scale %wq {factor = 0.5 : f32} : tensor<8x8xf32>
  %q = attn.linear %x, %sq layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %wk layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %x, %wv layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<causal> {scale = 1.0 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// 4-bit [out, in] projections: bytes and group scales [out, in / G] join
// along dim 0.
// CHECK-LABEL: func.func @four_bit_out_in
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x64xf32>, %[[WQ:[^:]*]]: tensor<64x32xui8>, %[[SQ:[^:]*]]: tensor<64x2xf32>, %[[WK:[^:]*]]: tensor<64x32xui8>, %[[SK:[^:]*]]: tensor<64x2xf32>, %[[WV:[^:]*]]: tensor<64x32xui8>, %[[SV:[^:]*]]: tensor<64x2xf32>)
// CHECK-NEXT: %[[W:.*]] = attn.concat %[[WQ]], %[[WK]], %[[WV]] {dim = 0 : i64} : tensor<64x32xui8>, tensor<64x32xui8>, tensor<64x32xui8> -> tensor<192x32xui8>
// CHECK-NEXT: %[[S:.*]] = attn.concat %[[SQ]], %[[SK]], %[[SV]] {dim = 0 : i64} : tensor<64x2xf32>, tensor<64x2xf32>, tensor<64x2xf32> -> tensor<192x2xf32>
// CHECK-NEXT: attn.linear %[[X]], %[[W]] scales %[[S]] layout({{ ?}}out_in) : (tensor<?x?x64xf32>, tensor<192x32xui8>, tensor<192x2xf32>) -> tensor<?x?x192xf32>
func.func @four_bit_out_in(%x: tensor<?x?x64xf32>, %wq: tensor<64x32xui8>, %sq: tensor<64x2xf32>, %wk: tensor<64x32xui8>,
                           %sk: tensor<64x2xf32>, %wv: tensor<64x32xui8>, %sv: tensor<64x2xf32>) -> tensor<?x?x64xf32> {
  %q = attn.linear %x, %wq scales %sq layout(out_in) : (tensor<?x?x64xf32>, tensor<64x32xui8>, tensor<64x2xf32>) -> tensor<?x?x64xf32>
  %k = attn.linear %x, %wk scales %sk layout(out_in) : (tensor<?x?x64xf32>, tensor<64x32xui8>, tensor<64x2xf32>) -> tensor<?x?x64xf32>
  %v = attn.linear %x, %wv scales %sv layout(out_in) : (tensor<?x?x64xf32>, tensor<64x32xui8>, tensor<64x2xf32>) -> tensor<?x?x64xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<causal> {scale = 0.5 : f32} : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %o : tensor<?x?x64xf32>
}

// -----

// Q with groups of 32 and K, V with groups of 16: not joined into one GEMM.
// CHECK-LABEL: func.func @four_bit_groups_differ
// CHECK-NOT: attn.concat %{{.*}} : tensor<64x2xf32>, tensor<64x4xf32>
// CHECK: attn.concat %{{.*}}, %{{.*}} {dim = 0 : i64} : tensor<64x4xf32>, tensor<64x4xf32> -> tensor<128x4xf32>
func.func @four_bit_groups_differ(%x: tensor<?x?x64xf32>, %wq: tensor<64x32xui8>, %sq: tensor<64x2xf32>, %wk: tensor<64x32xui8>,
                                  %sk: tensor<64x4xf32>, %wv: tensor<64x32xui8>, %sv: tensor<64x4xf32>) -> tensor<?x?x64xf32> {
  %q = attn.linear %x, %wq scales %sq layout(out_in) : (tensor<?x?x64xf32>, tensor<64x32xui8>, tensor<64x2xf32>) -> tensor<?x?x64xf32>
  %k = attn.linear %x, %wk scales %sk layout(out_in) : (tensor<?x?x64xf32>, tensor<64x32xui8>, tensor<64x4xf32>) -> tensor<?x?x64xf32>
  %v = attn.linear %x, %wv scales %sv layout(out_in) : (tensor<?x?x64xf32>, tensor<64x32xui8>, tensor<64x4xf32>) -> tensor<?x?x64xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<causal> {scale = 0.5 : f32} : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %o : tensor<?x?x64xf32>
}
