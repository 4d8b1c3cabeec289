//===- compiler/import/GptNeox.cpp - GPT-NeoX, Pythia ---------------------===//
//
// GPTNeoXForCausalLM: token embeddings, blocks of two LayerNorms around an
// attention whose packed query_key_value holds each head's Q, K and V rows
// together ([heads, 3, head_dim]: `qkv_layout = per_head`) with rotary
// embeddings on the first partial_rotary_factor of each head, and a GELU
// MLP, added in parallel (use_parallel_residual: x + attn(ln1 x) + mlp(ln2
// x)) or in sequence; a final LayerNorm and the untied head embed_out.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/AttnWriter.h"
#include "compiler/import/Registry.h"
#include "compiler/import/Rope.h"

namespace attnc::import {

static void importGptNeox(ImportContext &ctx, AttnWriter &w) {
  Config &cfg = ctx.config();
  std::string name = ctx.modelName();
  int64_t d = cfg.count("hidden_size");
  int64_t heads = cfg.count("num_attention_heads");
  int64_t layers = cfg.count("num_hidden_layers");
  int64_t inner = cfg.count("intermediate_size");
  int64_t vocab = cfg.count("vocab_size");
  int64_t positions = cfg.integer("max_position_embeddings", 2048);
  cfg.divides("num_attention_heads", heads, "hidden_size", d);
  int64_t headDim = heads ? d / heads : 0;
  double eps = cfg.positive("layer_norm_eps", 1e-5);
  std::string act = ctx.activation("hidden_act", "gelu", "X");
  // transformers 5 moves rotary_emb_base and rotary_pct into
  // rope_parameters (rope_theta, partial_rotary_factor); older configs keep
  // them at the top.
  RopeArgs rope;
  std::string factorField = "rope_parameters.partial_rotary_factor";
  if (!cfg.has("rope_parameters") &&
      (cfg.has("rotary_emb_base") || cfg.has("rotary_pct"))) {
    rope.text =
        "rope_theta = " + formatReal(cfg.positive("rotary_emb_base", 10000));
    rope.fields = "rotary_emb_base";
    factorField = "rotary_pct";
  } else {
    rope = readRopeArgs(ctx, 10000);
  }
  double factor = cfg.positive(factorField, 0.25);
  // transformers: dim = int(head_dim * partial_rotary_factor).
  int64_t rotary = int64_t(double(headDim) * factor);
  if (headDim && (rotary <= 0 || rotary % 2 || rotary > headDim))
    cfg.fail(factorField, "gives " + std::to_string(rotary) +
                              " rotary features of a head of " +
                              std::to_string(headDim) +
                              "; they must be even, positive and at most the "
                              "head");
  bool parallel = cfg.boolean("use_parallel_residual", true);
  bool bias = cfg.boolean("attention_bias", true);
  if (!bias)
    ctx.unsupported("attention_bias", "false",
                    "attnc import reads GPT-NeoX with its attention biases");
  if (cfg.boolean("tie_word_embeddings", false))
    ctx.unsupported("tie_word_embeddings", "true",
                    "attnc import reads GPT-NeoX with its own embed_out");
  std::string head = ctx.head({"logits", "hidden"});
  int64_t context = ctx.maxContext("max_position_embeddings", positions, false);
  if (ctx.failed())
    return;

  std::string p = ctx.prefix({"gpt_neox.", ""}, "embed_in.weight");
  std::string L = p + "layers.{i}.";
  Extent D{d, "hidden_size"};
  Extent D3{3 * d, "3 * hidden_size"};
  Extent I{inner, "intermediate_size"};
  std::string dText = std::to_string(d);

  w.open("model " + name);
  w.decoderInputs(head, context, ctx.contextNote());
  w.weights({{p + "embed_in.weight", {{vocab, "vocab_size"}, D}}});
  w.line("x = embedding(ids, " + p + "embed_in)");
  w.blank();
  w.open("repeat " + std::to_string(layers) + " as i", "num_hidden_layers");
  w.weights({{L + "input_layernorm.weight", {D}},
             {L + "input_layernorm.bias", {D}},
             {L + "attention.query_key_value.weight", {D3, D}},
             {L + "attention.query_key_value.bias", {D3}},
             {L + "attention.dense.weight", {D, D}},
             {L + "attention.dense.bias", {D}},
             {L + "post_attention_layernorm.weight", {D}},
             {L + "post_attention_layernorm.bias", {D}},
             {L + "mlp.dense_h_to_4h.weight", {I, D}},
             {L + "mlp.dense_h_to_4h.bias", {I}},
             {L + "mlp.dense_4h_to_h.weight", {D, I}},
             {L + "mlp.dense_4h_to_h.bias", {D}}},
            layers);
  w.kvCache("cache.{i}", "L", dText, heads);
  w.blank();
  std::string epsText = formatReal(eps);
  std::string indent(19, ' ');
  std::string rotaryText =
      rotary == headDim ? "" : ", rope_dims = " + std::to_string(rotary);
  w.line("a = self_attention(layer_norm(x, " + L + "input_layernorm, eps = " +
             epsText + "),\n" + indent + "heads = " + std::to_string(heads) +
             ", qkv = " + L + "attention.query_key_value,\n" + indent +
             "qkv_layout = per_head, out = " + L + "attention.dense,\n" +
             indent + "mask = causal, rope = half" + rotaryText + ", " +
             rope.text + ",\n" + indent + "cache = cache.{i})",
         "layer_norm_eps, num_attention_heads, " + factorField + ", " +
             rope.fields);
  if (!parallel)
    w.line("x = a + x", "use_parallel_residual false");
  std::string gelu = act;
  gelu.replace(gelu.find('X'), 1,
               "linear(layer_norm(x, " + L +
                   "post_attention_layernorm, eps = " + epsText + "),\n" +
                   "                        " + L + "mlp.dense_h_to_4h)");
  w.line("x = linear(" + gelu + ",\n           " + L + "mlp.dense_4h_to_h)" +
             (parallel ? " + a + x" : " + x"),
         parallel ? "use_parallel_residual: x + attn(ln1 x) + mlp(ln2 x)"
                  : "hidden_act");
  w.close();
  w.blank();
  w.weights({{p + "final_layer_norm.weight", {D}},
             {p + "final_layer_norm.bias", {D}}});
  w.line("h = layer_norm(x, " + p + "final_layer_norm, eps = " + epsText + ")",
         "layer_norm_eps");
  if (head == "hidden") {
    w.line("output hidden = h");
  } else {
    w.weights({{"embed_out.weight", {{vocab, "vocab_size"}, D}}});
    w.line("output logits = linear(h, embed_out)", "tie_word_embeddings false");
  }
  w.close();
}

void registerGptNeox(ArchitectureRegistry &registry) {
  registry.add("GPTNeoXForCausalLM", importGptNeox);
}

} // namespace attnc::import
