//===- compiler/import/Gpt2.cpp - GPT-2 -----------------------------------===//
//
// GPT2LMHeadModel: learned token and position embeddings, pre-norm blocks
// of packed Conv1D attention (stored [in, out]) and a GELU MLP, ln_f, and a
// head tied to the token table unless tie_word_embeddings says otherwise.
// A Hub checkpoint saved from GPT2Model has the same keys without
// `transformer.`.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Registry.h"

namespace attnc::import {

static void importGpt2(ImportContext &ctx, AttnWriter &w) {
  Config &cfg = ctx.config();
  std::string name = ctx.modelName();
  int64_t d = cfg.count("n_embd");
  int64_t heads = cfg.count("n_head");
  int64_t layers = cfg.count("n_layer");
  int64_t positions = cfg.count("n_positions");
  int64_t vocab = cfg.count("vocab_size");
  Extent inner = cfg.has("n_inner") ? Extent{cfg.count("n_inner"), "n_inner"}
                                    : Extent{4 * d, "4 * n_embd"};
  double eps = cfg.positive("layer_norm_epsilon", 1e-5);
  std::string act = ctx.activation("activation_function", "gelu_new", "MLP");
  bool scaled = cfg.boolean("scale_attn_weights", true);
  if (cfg.boolean("scale_attn_by_inverse_layer_idx", false))
    ctx.unsupported("scale_attn_by_inverse_layer_idx", "true",
                    "the .attn language cannot scale each layer's scores "
                    "by its own factor yet");
  if (cfg.boolean("add_cross_attention", false))
    ctx.unsupported("add_cross_attention", "true",
                    "attnc import reads decoder-only GPT-2");
  bool tied = cfg.boolean("tie_word_embeddings", true);
  std::string head = ctx.head({"logits", "hidden"});
  cfg.divides("n_head", heads, "n_embd", d);
  int64_t context = ctx.maxContext("n_positions", positions, true);
  if (ctx.failed())
    return;

  std::string p = ctx.prefix({"transformer.", ""}, "wte.weight");
  std::string L = p + "h.{i}.";
  Extent D{d, "n_embd"};

  w.open("model " + name);
  w.decoderInputs(head, context, ctx.contextNote());
  w.weights({{p + "wte.weight", {{vocab, "vocab_size"}, D}},
             {p + "wpe.weight", {{positions, "n_positions"}, D}}});
  w.line("x = embedding(ids, " + p + "wte) + embedding(positions(S), " + p +
         "wpe)");
  w.blank();
  w.open("repeat " + std::to_string(layers) + " as i", "n_layer");
  w.weights({{L + "ln_1.weight", {D}},
             {L + "ln_1.bias", {D}},
             {L + "attn.c_attn.weight", {D, {3 * d, "3 * n_embd"}}, true},
             {L + "attn.c_attn.bias", {{3 * d, "3 * n_embd"}}},
             {L + "attn.c_proj.weight", {D, D}, true},
             {L + "attn.c_proj.bias", {D}},
             {L + "ln_2.weight", {D}},
             {L + "ln_2.bias", {D}},
             {L + "mlp.c_fc.weight", {D, inner}, true},
             {L + "mlp.c_fc.bias", {inner}},
             {L + "mlp.c_proj.weight", {inner, D}, true},
             {L + "mlp.c_proj.bias", {D}}},
            layers);
  w.kvCache("cache.{i}", "L", std::to_string(d), heads);
  w.blank();
  std::string epsText = formatReal(eps);
  w.line("h = layer_norm(x, " + L + "ln_1, eps = " + epsText + ")",
         "layer_norm_epsilon");
  w.line("x = x + self_attention(h, heads = " + std::to_string(heads) +
             ", qkv = " + L + "attn.c_attn,\n" +
             "                       out = " + L +
             "attn.c_proj, mask = causal," + (scaled ? "" : " scale = 1,") +
             "\n                       cache = cache.{i})",
         scaled ? "n_head" : "n_head; scale_attn_weights false: unscaled");
  w.line("h = layer_norm(x, " + L + "ln_2, eps = " + epsText + ")",
         "layer_norm_epsilon");
  std::string mlp = act;
  mlp.replace(mlp.find("MLP"), 3, "linear(h, " + L + "mlp.c_fc)");
  w.line("x = x + linear(" + mlp + ",\n               " + L + "mlp.c_proj)",
         "activation_function");
  w.close();
  w.blank();
  w.weights({{p + "ln_f.weight", {D}}, {p + "ln_f.bias", {D}}});
  w.line("h = layer_norm(x, " + p + "ln_f, eps = " + epsText + ")",
         "layer_norm_epsilon");
  w.decoderHead(head, tied, p + "wte.weight", {vocab, "vocab_size"}, D);
  w.close();
}

void registerGpt2(ArchitectureRegistry &registry) {
  registry.add("GPT2LMHeadModel", importGpt2);
}

} // namespace attnc::import
