// RUN: attn-opt %s -split-input-file -attn-check-shapes -verify-diagnostics

func.func @transposed_batch(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]},
                            %y: tensor<?x?x8xf32> {attn.dim_symbols = ["S", "B"]}) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.add' op operand dim 0 is 'B' on one side and 'S' on the other}}
  %r = attn.add %x, %y : tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// -----

func.func @different_sequences(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]},
                               %y: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "T"]}) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'attn.add' op operand dim 1 is 'S' on one side and 'T' on the other}}
  %r = attn.add %x, %y : tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// -----

// The mismatch is found after it has travelled through other ops.
func.func @mismatch_downstream(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]},
                               %y: tensor<?x?x8xf32> {attn.dim_symbols = ["S", "B"]},
                               %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %l = attn.linear %x, %w layout(in_out) : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %g = attn.gelu %l : tensor<?x?x8xf32>
  // expected-error @+1 {{'attn.sdpa' op operand dim 0 is 'B' on one side and 'S' on the other}}
  %o = attn.sdpa %g, %y, %y heads(2) mask<none> {scale = 0.5 : f32} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{argument 0 has 2 dynamic dims but its 'attn.dim_symbols' attribute names 1}}
func.func @too_few_symbols(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B"]}) -> tensor<?x?x8xf32> {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{argument 1 has 1 dynamic dims but its 'attn.dim_symbols' attribute names 2}}
func.func @too_many_symbols(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]},
                            %y: tensor<?x8xf32> {attn.dim_symbols = ["B", "S"]}) -> tensor<?x?x8xf32> {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{argument 0 has 2 dynamic dims but its 'attn.dim_symbols' attribute names 0}}
func.func @no_symbols(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{argument 0 has 0 dynamic dims but its 'attn.dim_symbols' attribute names 1}}
func.func @symbols_on_static(%x: tensor<4x8xf32> {attn.dim_symbols = ["B"]}) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// expected-error @+1 {{argument 0 has a dynamic dim with no symbol}}
func.func @empty_symbol(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", ""]}) -> tensor<?x?x8xf32> {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{argument 0 has a dynamic dim with no symbol}}
func.func @symbol_not_a_string(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", 1 : i64]}) -> tensor<?x?x8xf32> {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{argument 1 is not a ranked tensor}}
func.func @unranked_argument(%x: tensor<?x8xf32> {attn.dim_symbols = ["S"]}, %y: tensor<*xf32>) -> tensor<?x8xf32> {
  return %x : tensor<?x8xf32>
}

// -----

// A slice of a symbolic dim is fixed (slice(x, dim = S, ...)); its other
// dims keep their symbols, as the joined tensors' dims but the joined one.
func.func @slice_keeps_other_symbols(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}, %y: tensor<?x4x8xf32> {attn.dim_symbols = ["T"]}) -> tensor<?x4x8xf32> {
  %s = attn.slice %x {dim = 1 : i64, offset = 0 : i64, size = 4 : i64} : tensor<?x?x8xf32> -> tensor<?x4x8xf32>
  // expected-error @+1 {{'attn.add' op operand dim 0 is 'B' on one side and 'T' on the other}}
  %a = attn.add %s, %y : tensor<?x4x8xf32>
  return %a : tensor<?x4x8xf32>
}

// -----

func.func @concat_mixes_symbols(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"]}, %y: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "T"]}) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'attn.concat' op operand dim 1 is 'S' on one side and 'T' on the other}}
  %c = attn.concat %x, %y {dim = 2 : i64} : tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x16xf32>
  return %c : tensor<?x?x16xf32>
}

// -----

func.func @dynamic_dim_from_nowhere(%a: tensor<4x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.concat' op result dim 0 is dynamic but no operand names its symbol}}
  %c = attn.concat %a, %a {dim = 0 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return %c : tensor<?x8xf32>
}
