// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @rope_odd_head_dim(%x: tensor<?x?x30xf32>, %p: tensor<?xi32>) -> tensor<?x?x30xf32> {
  // expected-error @+1 {{'attn.rope' op rotary embeddings rotate pairs of the 5 features of a head, so the rotated features must be even and at most 5, got 5}}
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
  // expected-error @+1 {{'attn.rope' op theta must be > 0 and finite}}
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
  // expected-error @+1 {{'attn.self_attention' op rotary embeddings rotate pairs of the 3 features of a head, so the rotated features must be even and at most 3, got 3}}
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

// -----

func.func @rope_rotary_dims(%x: tensor<?x?x32xf32>, %p: tensor<?xi32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'attn.rope' op rotary embeddings rotate pairs of the 8 features of a head, so the rotated features must be even and at most 8, got 10}}
  %r = attn.rope %x, %p style(half) {head_dim = 8 : i64, rotary_dims = 10 : i64, theta = 1.0e4 : f32} : (tensor<?x?x32xf32>, tensor<?xi32>) -> tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}

// -----

func.func @rope_llama3_missing(%x: tensor<?x?x32xf32>, %p: tensor<?xi32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'attn.rope' op llama3 rope scaling needs factor, low_freq_factor, high_freq_factor and original_max}}
  %r = attn.rope %x, %p style(half) {head_dim = 8 : i64, theta = 1.0e4 : f32, scaling = #attn<rope_scaling llama3>, factor = 8.0 : f32} : (tensor<?x?x32xf32>, tensor<?xi32>) -> tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}

// -----

func.func @rope_factor_without_type(%x: tensor<?x?x32xf32>, %p: tensor<?xi32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'attn.rope' op rope scaling parameters need a scaling type (linear or llama3)}}
  %r = attn.rope %x, %p style(half) {head_dim = 8 : i64, theta = 1.0e4 : f32, factor = 8.0 : f32} : (tensor<?x?x32xf32>, tensor<?xi32>) -> tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}

// -----

func.func @self_attention_head_dim_out(%x: tensor<?x?x12xf32>, %wq: tensor<16x12xf32>, %wo: tensor<12x12xf32>) -> tensor<?x?x12xf32> {
  // expected-error @+1 {{'attn.self_attention' op out weight must be [12, 16] ([out, in]), got [12, 12]}}
  %a = attn.self_attention %x heads(2) mask<none> q(%wq) k(%wq) v(%wq) out(%wo) {head_dim = 8 : i64}
      : (tensor<?x?x12xf32>, tensor<16x12xf32>, tensor<16x12xf32>, tensor<16x12xf32>, tensor<12x12xf32>) -> tensor<?x?x12xf32>
  return %a : tensor<?x?x12xf32>
}

// -----

func.func @self_attention_rope_dims_without_rope(%x: tensor<?x?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.self_attention' op rope_theta, rope_dims and rope scaling need rope}}
  %a = attn.self_attention %x heads(2) mask<none> q(%w) k(%w) v(%w) out(%w) {rope_dims = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %a : tensor<?x?x16xf32>
}

// -----

func.func @self_attention_per_head_separate(%x: tensor<?x?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.self_attention' op qkv_per_head needs a packed qkv projection and as many key/value heads as heads}}
  %a = attn.self_attention %x heads(2) mask<none> q(%w) k(%w) v(%w) out(%w) {qkv_per_head}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %a : tensor<?x?x16xf32>
}
