// RUN: attn-opt %s -split-input-file -attn-prune-entry-inputs | FileCheck %s

// A decode drops the inputs it does not read (an encoder's ids, when its
// cross attention reads a cache); it keeps `position`, read or not, and its
// states, read or not.

// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%[[IDS:[^:]*]]: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"], attn.name = "ids"},
// CHECK-SAME: %{{[^:]*}}: tensor<?xi32> {attn.dim_symbols = ["B"], attn.name = "position"},
// CHECK-SAME: %[[K:[^:]*]]: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "T"], attn.state = "cross.key"},
// CHECK-SAME: %{{[^:]*}}: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "L"], attn.state = "unused.key"})
// CHECK-NEXT: attn.sdpa %[[IDS]], %[[K]], %[[K]]
func.func @decode(%src: tensor<?x?xi32> {attn.dim_symbols = ["B", "T"], attn.name = "src"},
                  %x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"], attn.name = "ids"},
                  %pos: tensor<?xi32> {attn.dim_symbols = ["B"], attn.name = "position"},
                  %k: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "T"], attn.state = "cross.key"},
                  %u: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "L"], attn.state = "unused.key"})
    -> tensor<?x?x8xf32> attributes {attn.entry = "decode"} {
  %o = attn.sdpa %x, %k, %k heads(2) mask<none> {scale = 1.0 : f32}
      : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// A prefill drops an unread input too, and `position` is no input of it.

// CHECK-LABEL: func.func @prefill
// CHECK-SAME: (%{{[^:]*}}: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"], attn.name = "x"})
// CHECK-NOT: attn.name = "unread"
func.func @prefill(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"], attn.name = "x"},
                   %unread: tensor<?xi32> {attn.dim_symbols = ["B"], attn.name = "unread"})
    -> tensor<?x?x8xf32> attributes {attn.entry = "prefill"} {
  %g = attn.gelu %x : tensor<?x?x8xf32>
  return %g : tensor<?x?x8xf32>
}

// -----

// The model function ("run", no attn.entry) keeps every input, read or not.

// CHECK-LABEL: func.func @model
// CHECK-SAME: attn.name = "x"
// CHECK-SAME: attn.name = "unread"
func.func @model(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"], attn.name = "x"},
                 %unread: tensor<?xi32> {attn.dim_symbols = ["B"], attn.name = "unread"})
    -> tensor<?x?x8xf32> {
  %g = attn.gelu %x : tensor<?x?x8xf32>
  return %g : tensor<?x?x8xf32>
}
