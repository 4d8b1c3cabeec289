// Not a model: `attnc --init-weights` on it writes a random input `x` of
// shape [5, 8] for the driver tests to run models on.
func.func @model() -> tensor<5x8xf32> {
  %x = attn.weight "x" : tensor<5x8xf32>
  return %x : tensor<5x8xf32>
}
