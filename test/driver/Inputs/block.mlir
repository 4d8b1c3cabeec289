// A small pre-norm-free transformer block in frontend IR: the driver tests
// compile it, or write its random weights for variants of it.
func.func @model(%x: tensor<?x?x8xf32> {attn.dim_symbols = ["B", "S"], attn.name = "x"})
    -> (tensor<?x?x8xf32> {attn.name = "h"}, tensor<?x?x16xf32> {attn.name = "y"})
    attributes {attn.model_name = "block", attn.symbols = [["B", 0], ["S", 128]]} {
  %w = attn.weight "attn.c_attn.weight" : tensor<8x24xf32>
  %b = attn.weight "attn.c_attn.bias" : tensor<24xf32>
  %wo = attn.weight "attn.c_proj.weight" : tensor<8x8xf32>
  %wt = attn.transpose %w : tensor<8x24xf32> -> tensor<24x8xf32>
  %wot = attn.transpose %wo : tensor<8x8xf32> -> tensor<8x8xf32>
  %a = attn.self_attention %x heads(2) mask<causal> qkv(%wt, %b) out(%wot) : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %r = attn.add %x, %a : tensor<?x?x8xf32>
  %g = attn.weight "ln.weight" : tensor<8xf32>
  %be = attn.weight "ln.bias" : tensor<8xf32>
  %n = attn.layer_norm %r, %g, %be {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %w1 = attn.weight "fc.weight" : tensor<16x8xf32>
  %l = attn.linear %n, %w1 layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %y = attn.gelu %l : tensor<?x?x16xf32>
  return %r, %y : tensor<?x?x8xf32>, tensor<?x?x16xf32>
}
