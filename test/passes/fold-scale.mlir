// RUN: attn-opt %s -split-input-file -attn-fold-scale | FileCheck %s

// CHECK-LABEL: func.func @fold_weight_and_bias
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[WQ:[^:]*]]: tensor<8x8xf32>, %[[BQ:[^:]*]]: tensor<8xf32>, %[[WK:[^:]*]]: tensor<8x8xf32>, %[[WV:[^:]*]]: tensor<8x8xf32>)
// CHECK-DAG: %[[K:.*]] = attn.linear %[[X]], %[[WK]] layout({{ ?}}out_in)
// CHECK-DAG: %[[V:.*]] = attn.linear %[[X]], %[[WV]] layout({{ ?}}out_in)
// CHECK-DAG: %[[SW:.*]] = attn.scale %[[WQ]] {factor = 5.000000e-01 : f32} : tensor<8x8xf32>
// CHECK-DAG: %[[SB:.*]] = attn.scale %[[BQ]] {factor = 5.000000e-01 : f32} : tensor<8xf32>
// CHECK-DAG: %[[Q:.*]] = attn.linear %[[X]], %[[SW]], %[[SB]] layout({{ ?}}out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[V]] heads(2) mask<causal> {scale = 1.000000e+00 : f32}
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: attn.scale
func.func @fold_weight_and_bias(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %bq: tensor<8xf32>,
                                %wk: tensor<8x8xf32>, %wv: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %q = attn.linear %x, %wq, %bq layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %k = attn.linear %x, %wk layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = attn.linear %x, %wv layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %v heads(2) mask<causal> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// No bias: only the weight is scaled. The layout is kept, and only the query
// is touched (the key and value are not scaled).
// CHECK-LABEL: func.func @fold_weight_only_in_out
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x16xf32>, %[[WQ:[^:]*]]: tensor<16x16xf32>, %[[K:[^:]*]]: tensor<?x?x16xf32>)
// CHECK-NEXT: %[[SW:.*]] = attn.scale %[[WQ]] {factor = 2.500000e-01 : f32} : tensor<16x16xf32>
// CHECK-NEXT: %[[Q:.*]] = attn.linear %[[X]], %[[SW]] layout({{ ?}}in_out) : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[K]] heads(1) mask<none> {scale = 1.000000e+00 : f32}
// CHECK-NEXT: return %[[O]]
func.func @fold_weight_only_in_out(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>, %k: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %q = attn.linear %x, %wq layout(in_out) : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %o = attn.sdpa %q, %k, %k heads(1) mask<none> {scale = 0.25 : f32} : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32> -> tensor<?x?x16xf32>
  return %o : tensor<?x?x16xf32>
}

// -----

// The query projection is also returned: scaling its weights would change
// that other use, so nothing happens.
// CHECK-LABEL: func.func @query_with_second_use
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[WQ:[^:]*]]: tensor<8x8xf32>, %[[K:[^:]*]]: tensor<?x?x8xf32>)
// CHECK-NEXT: %[[Q:.*]] = attn.linear %[[X]], %[[WQ]] layout({{ ?}}out_in)
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[K]] heads(2) mask<none> {scale = 5.000000e-01 : f32}
// CHECK-NEXT: return %[[O]], %[[Q]]
// CHECK-NOT: attn.scale
func.func @query_with_second_use(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %k: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = attn.linear %x, %wq layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %k heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o, %q : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// The same projection as query and key: two uses, left alone.
// CHECK-LABEL: func.func @query_is_also_key
// CHECK-NOT: attn.scale
// CHECK: attn.sdpa {{.*}} {scale = 5.000000e-01 : f32}
func.func @query_is_also_key(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %v: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %q = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %q, %v heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// The query is not a projection: nothing to fold into.
// CHECK-LABEL: func.func @query_not_a_linear
// CHECK-NOT: attn.scale
// CHECK: attn.sdpa {{.*}} {scale = 5.000000e-01 : f32}
func.func @query_not_a_linear(%q: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %g = attn.gelu %q : tensor<?x?x8xf32>
  %o = attn.sdpa %g, %q, %q heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// Scale already 1 (folded before, or the model asked for it): unchanged.
// CHECK-LABEL: func.func @scale_already_one
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[WQ:[^:]*]]: tensor<8x8xf32>, %[[BQ:[^:]*]]: tensor<8xf32>, %[[K:[^:]*]]: tensor<?x?x8xf32>)
// CHECK-NEXT: %[[Q:.*]] = attn.linear %[[X]], %[[WQ]], %[[BQ]] layout({{ ?}}out_in)
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[K]], %[[K]] heads(2) mask<causal> {scale = 1.000000e+00 : f32}
// CHECK-NEXT: return %[[O]]
func.func @scale_already_one(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %bq: tensor<8xf32>, %k: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %q = attn.linear %x, %wq, %bq layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %k heads(2) mask<causal> {scale = 1.0 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// Weight expressions (slices of a packed weight) are scaled like any weight.
// CHECK-LABEL: func.func @fold_into_sliced_weight
// CHECK: %[[W:.*]] = attn.weight "qkv.weight" : tensor<24x8xf32>
// CHECK: %[[WQ:.*]] = attn.slice %[[W]] {dim = 0 : i64, offset = 0 : i64, size = 8 : i64}
// CHECK: %[[SW:.*]] = attn.scale %[[WQ]] {factor = 5.000000e-01 : f32} : tensor<8x8xf32>
// CHECK: %[[Q:.*]] = attn.linear %{{.*}}, %[[SW]] layout({{ ?}}out_in)
// CHECK: attn.sdpa %[[Q]], {{.*}} {scale = 1.000000e+00 : f32}
func.func @fold_into_sliced_weight(%x: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %w = attn.weight "qkv.weight" : tensor<24x8xf32>
  %wq = attn.slice %w {dim = 0 : i64, offset = 0 : i64, size = 8 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>
  %q = attn.linear %x, %wq layout(out_in) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %o = attn.sdpa %q, %k, %k heads(2) mask<causal> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}
