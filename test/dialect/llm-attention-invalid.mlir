// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @rope_odd_head_dim(%x: tensor<?x?x30xf32>, %p: tensor<?xi32>) -> tensor<?x?x30xf32> {
  // expected-error @+1 {{'attn.rope' op head_dim must be even, got 5}}
  %r = attn.rope %x, %p style(half) {head_dim = 5 : i64, theta = 1.0e4 : f32} : (tensor<?x?x30xf32>, tensor<?xi32>) -> tensor<?x?x30xf32>
  return %r : tensor<?x?x30xf32>
}

// -----

func.func @rope_features_not_heads(%x: tensor<?x?x30xf32>, %p: tensor<?xi32>) -> tensor<?x?x30xf32> {
  // expected-error @+1 {{'attn.rope' op the features (30) are not a multiple of head_dim = 8}}
  %r = attn.rope %x, %p style(half) {head_dim = 8 : i64, theta = 1.0e4 : f32} : (tensor<?x?x30xf32>, tensor<?xi32>) -> tensor<?x?x30xf32>
  return %r : tensor<?x?x30xf32>
}

// -----

func.func @rope_theta(%x: tensor<?x?x32xf32>, %p: tensor<?xi32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'attn.rope' op theta must be > 0}}
  %r = attn.rope %x, %p style(half) {head_dim = 8 : i64, theta = 0.0 : f32} : (tensor<?x?x32xf32>, tensor<?xi32>) -> tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}

// -----

func.func @rope_positions(%x: tensor<?x7x32xf32>, %p: tensor<5xi32>) -> tensor<?x7x32xf32> {
  // expected-error @+1 {{'attn.rope' op positions 'tensor<5xi32>' do not match the leading dims of the input 'tensor<?x7x32xf32>'}}
  %r = attn.rope %x, %p style(half) {head_dim = 8 : i64, theta = 1.0e4 : f32} : (tensor<?x7x32xf32>, tensor<5xi32>) -> tensor<?x7x32xf32>
  return %r : tensor<?x7x32xf32>
}

// -----

func.func @sdpa_softcap(%q: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'attn.sdpa' op softcap must be > 0}}
  %o = attn.sdpa %q, %q, %q heads(4) mask<none> {scale = 1.0 : f32, softcap = -1.0 : f32}
      : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}

// -----

func.func @self_attention_kv_projection(%x: tensor<?x?x32xf32>, %w: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'attn.self_attention' op k weight must be [16, 32] ([out, in]), got [32, 32]}}
  %a = attn.self_attention %x heads(4) kv_heads(2) mask<none> q(%w) k(%w) v(%w) out(%w)
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %a : tensor<?x?x32xf32>
}

// -----

func.func @self_attention_kv_heads(%x: tensor<?x?x32xf32>, %w: tensor<32x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'attn.self_attention' op kv_heads = 3 does not divide heads = 4}}
  %a = attn.self_attention %x heads(4) kv_heads(3) mask<none> q(%w) k(%w) v(%w) out(%w)
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  return %a : tensor<?x?x32xf32>
}

// -----

func.func @self_attention_rope_odd(%x: tensor<?x?x12xf32>, %w: tensor<12x12xf32>) -> tensor<?x?x12xf32> {
  // expected-error @+1 {{'attn.self_attention' op rotary embeddings need an even head dim, got 3}}
  %a = attn.self_attention %x heads(4) mask<none> rope(half) q(%w) k(%w) v(%w) out(%w)
      : (tensor<?x?x12xf32>, tensor<12x12xf32>, tensor<12x12xf32>, tensor<12x12xf32>, tensor<12x12xf32>) -> tensor<?x?x12xf32>
  return %a : tensor<?x?x12xf32>
}

// -----

func.func @mask_unknown_term(%q: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{unknown mask term 'alibis'; the terms are none, causal, window(L, R), offset(N), alibi}}
  %o = attn.sdpa %q, %q, %q heads(4) mask<alibis> {scale = 1.0 : f32}
      : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}
