//===- compiler/import/Bart.cpp - BART, encoder and decoder ---------------===//
//
// BartForConditionalGeneration: one model with the encoder over `ids` and
// the decoder over `decoder_ids`. Both are post-norm (each sublayer added
// and normalised), embed tokens from the shared table (times
// sqrt(d_model) with scale_embedding) plus learned positions that start at
// row 2 of their tables, and normalise that sum. The decoder's
// self-attention keeps KV caches; its cross-attention keeps the encoder's
// keys and values in caches of their own, written by prefill, so decode
// takes only the new decoder tokens and the encoder's lengths. The head is
// the shared table plus final_logits_bias.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Registry.h"

#include <cmath>

namespace attnc::import {

namespace {
/// One side's sizes and where they come from.
struct Side {
  const char *name; // "encoder", "decoder"
  int64_t layers, heads, ffn;
};
} // namespace

/// Writes `v = layer_norm(v + SUBLAYER, NORM, eps)`: a post-norm sublayer.
static void postNorm(AttnWriter &w, llvm::StringRef v,
                     const llvm::Twine &sublayer, const llvm::Twine &norm,
                     llvm::StringRef eps) {
  w.line(v + " = layer_norm(" + v + " + " + sublayer + ",\n" +
         std::string(v.size() + 14, ' ') + norm + ", eps = " + eps + ")");
}

/// The projections of a BartAttention at `at` (q_proj, ..., out_proj).
static std::string projections(llvm::StringRef at, llvm::StringRef indent) {
  std::string s;
  for (auto [arg, module] : {std::pair{"q", "q_proj"},
                             {"k", "k_proj"},
                             {"v", "v_proj"},
                             {"out", "out_proj"}})
    s += ",\n" + indent.str() + arg + " = " + at.str() + module;
  return s;
}

static void importBart(ImportContext &ctx, AttnWriter &w) {
  Config &cfg = ctx.config();
  int64_t d = cfg.count("d_model");
  Side enc{"encoder", cfg.count("encoder_layers"),
           cfg.count("encoder_attention_heads"), cfg.count("encoder_ffn_dim")};
  Side dec{"decoder", cfg.count("decoder_layers"),
           cfg.count("decoder_attention_heads"), cfg.count("decoder_ffn_dim")};
  int64_t vocab = cfg.count("vocab_size");
  int64_t positions = cfg.count("max_position_embeddings");
  bool scaled = cfg.boolean("scale_embedding", false);
  cfg.divides("encoder_attention_heads", enc.heads, "d_model", d);
  cfg.divides("decoder_attention_heads", dec.heads, "d_model", d);
  std::string act = ctx.activation("activation_function", "gelu", "MLP");
  std::string head = ctx.head({"logits", "hidden"});
  int64_t context = ctx.maxContext("max_position_embeddings", positions, true);
  if (ctx.failed())
    return;

  // BartLearnedPositionalEmbedding: position j reads row j + 2.
  constexpr int64_t kOffset = 2;
  Extent D{d, "d_model"}, V{vocab, "vocab_size"};
  Extent P{positions + kOffset, "max_position_embeddings + 2"};
  // nn.LayerNorm's default; BART's config has no field for it.
  std::string eps = "1e-05";
  std::string scale =
      scaled ? " * " + formatReal(std::sqrt(double(d))) : std::string();
  std::string dText = std::to_string(d);

  w.open("model " + ctx.modelName());
  w.encoderDecoderInputs(head, context, ctx.contextNote());
  w.weights({{"model.shared.weight", {V, D}}});

  // The embeddings of one side: `v` over `ids` along `dim`.
  auto embed = [&](const Side &side, llvm::StringRef v, llvm::StringRef ids,
                   llvm::StringRef dim) {
    std::string E = std::string("model.") + side.name + ".";
    w.weights({{E + "embed_positions.weight", {P, D}},
               {E + "layernorm_embedding.weight", {D}},
               {E + "layernorm_embedding.bias", {D}}});
    std::string indent(v.size() + 14, ' ');
    w.line(v + " = layer_norm(embedding(" + ids + ", model.shared)" + scale +
               "\n" + indent + "+ embedding(positions(" + dim +
               ", start = 2), " + E + "embed_positions),\n" + indent + E +
               "layernorm_embedding, eps = " + eps + ")",
           scaled ? "scale_embedding: sqrt(d_model); positions from row 2"
                  : "positions from row 2");
  };
  auto feedForward = [&](llvm::StringRef v, llvm::StringRef L) {
    std::string mlp = act;
    mlp.replace(mlp.find("MLP"), 3,
                "linear(" + v.str() + ", " + L.str() + "fc1)");
    postNorm(w, v,
             "linear(" + mlp + ",\n" + std::string(v.size() + 25, ' ') + L +
                 "fc2)",
             L + "final_layer_norm", eps);
  };
  auto layerSpecs = [&](llvm::StringRef L, const Side &side,
                        llvm::ArrayRef<const char *> attentions) {
    Extent F{side.ffn, std::string(side.name) + "_ffn_dim"};
    std::vector<WeightSpec> specs;
    for (const char *a : attentions) {
      for (const char *p : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
        specs.push_back({L.str() + a + "." + p + ".weight", {D, D}});
        specs.push_back({L.str() + a + "." + p + ".bias", {D}});
      }
      specs.push_back({L.str() + a + "_layer_norm.weight", {D}});
      specs.push_back({L.str() + a + "_layer_norm.bias", {D}});
    }
    specs.push_back({L.str() + "fc1.weight", {F, D}});
    specs.push_back({L.str() + "fc1.bias", {F}});
    specs.push_back({L.str() + "fc2.weight", {D, F}});
    specs.push_back({L.str() + "fc2.bias", {D}});
    specs.push_back({L.str() + "final_layer_norm.weight", {D}});
    specs.push_back({L.str() + "final_layer_norm.bias", {D}});
    return specs;
  };

  embed(enc, "e", "ids", "T");
  w.blank();
  std::string L = "model.encoder.layers.{i}.";
  w.open("repeat " + std::to_string(enc.layers) + " as i", "encoder_layers");
  w.weights(layerSpecs(L, enc, {"self_attn"}), enc.layers);
  w.blank();
  // Aligned under the attention's first argument.
  std::string indent(34, ' ');
  postNorm(w, "e",
           "self_attention(e, heads = " + std::to_string(enc.heads) +
               projections(L + "self_attn.", indent) + ",\n" + indent +
               "mask = padding(lengths))",
           L + "self_attn_layer_norm", eps);
  feedForward("e", L);
  w.close();
  w.blank();

  embed(dec, "x", "decoder_ids", "S");
  w.blank();
  L = "model.decoder.layers.{i}.";
  w.open("repeat " + std::to_string(dec.layers) + " as i", "decoder_layers");
  w.weights(layerSpecs(L, dec, {"self_attn", "encoder_attn"}), dec.layers);
  w.kvCache("cache.{i}", "L", dText, dec.heads);
  w.kvCache("cross.{i}", "T", dText, /*kvHeads=*/0);
  w.blank();
  std::string heads = std::to_string(dec.heads);
  postNorm(w, "x",
           "self_attention(x, heads = " + heads +
               projections(L + "self_attn.", indent) + ",\n" + indent +
               "mask = causal, cache = cache.{i})",
           L + "self_attn_layer_norm", eps);
  indent.assign(35, ' ');
  postNorm(w, "x",
           "cross_attention(x, e, heads = " + heads +
               projections(L + "encoder_attn.", indent) + ",\n" + indent +
               "mask = padding(lengths), cache = cross.{i})",
           L + "encoder_attn_layer_norm", eps);
  feedForward("x", L);
  w.close();
  w.blank();
  if (head == "hidden") {
    w.line("output hidden = x");
  } else {
    w.weights({{"final_logits_bias", {{1, "1"}, V}}});
    w.line("output logits = linear(x, model.shared) + reshape("
           "final_logits_bias, [" +
               std::to_string(vocab) + "])",
           "the head is the token table, plus final_logits_bias");
  }
  w.close();
}

void registerBart(ArchitectureRegistry &registry) {
  registry.add("BartForConditionalGeneration", importBart);
}

} // namespace attnc::import
