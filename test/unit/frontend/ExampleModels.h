//===- ExampleModels.h - Models the frontend must accept --------*- C++ -*-===//
//
// Part of attnc.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_UNIT_FRONTEND_EXAMPLEMODELS_H
#define ATTNC_TEST_UNIT_FRONTEND_EXAMPLEMODELS_H

namespace attnc::test {

inline constexpr const char *kGpt2Block = R"(model gpt2_block {
  dim B, S <= 1024
  input x : f32[B, S, 768]
  weight ln_1.weight : f32[768]
  weight ln_1.bias : f32[768]
  weight attn.c_attn.weight : f32[768, 2304] layout(in, out)
  weight attn.c_attn.bias : f32[2304]
  weight attn.c_proj.weight : f32[768, 768] layout(in, out)
  weight attn.c_proj.bias : f32[768]
  weight ln_2.weight : f32[768]
  weight ln_2.bias : f32[768]
  weight mlp.c_fc.weight : f32[768, 3072] layout(in, out)
  weight mlp.c_fc.bias : f32[3072]
  weight mlp.c_proj.weight : f32[3072, 768] layout(in, out)
  weight mlp.c_proj.bias : f32[768]
  h  = layer_norm(x, ln_1, eps = 1e-5)
  a  = self_attention(h, heads = 12, qkv = attn.c_attn, out = attn.c_proj, mask = causal)
  x1 = x + a
  h2 = layer_norm(x1, ln_2)
  f  = linear(gelu(linear(h2, mlp.c_fc)), mlp.c_proj)
  output y = x1 + f
}
)";

inline constexpr const char *kBertLayer =
    R"(# BERT-base encoder layer, post-norm
model bert_layer {
  dim B, S <= 512
  input x : f32[B, S, 768]
  weight attention.self.query.weight : f32[768, 768]
  weight attention.self.query.bias : f32[768]
  weight attention.self.key.weight : f32[768, 768]
  weight attention.self.key.bias : f32[768]
  weight attention.self.value.weight : f32[768, 768]
  weight attention.self.value.bias : f32[768]
  weight attention.output.dense.weight : f32[768, 768]
  weight attention.output.dense.bias : f32[768]
  weight attention.output.LayerNorm.weight : f32[768]
  weight attention.output.LayerNorm.bias : f32[768]
  weight intermediate.dense.weight : f32[3072, 768]
  weight intermediate.dense.bias : f32[3072]
  weight output.dense.weight : f32[768, 3072]
  weight output.dense.bias : f32[768]
  weight output.LayerNorm.weight : f32[768]
  weight output.LayerNorm.bias : f32[768]
  a = self_attention(x, heads = 12,
                     q = attention.self.query,
                     k = attention.self.key,
                     v = attention.self.value,
                     out = attention.output.dense,
                     mask = none)
  x = layer_norm(x + a, attention.output.LayerNorm, eps = 1e-12)
  f = linear(gelu(linear(x, intermediate.dense)), output.dense)
  x = layer_norm(x + f, output.LayerNorm, eps = 1e-12)
  output y = x
}
)";

} // namespace attnc::test

#endif // ATTNC_TEST_UNIT_FRONTEND_EXAMPLEMODELS_H
