//===- compiler/import/T5.cpp - T5's encoder ------------------------------===//
//
// T5EncoderModel: the token table `shared`, then pre-norm blocks of
// unscaled self-attention over the unpadded keys, plus the bucketed
// relative position bias of block 0's table (computed once, added in every
// block), and a ReLU or gated feed-forward; T5LayerNorm (an RMSNorm) before
// each and at the end. The import gives the last hidden state.
// T5ForConditionalGeneration is not imported: its decoder adds the bias to
// attentions over KV caches, which the language cannot express yet.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Registry.h"

namespace attnc::import {

/// T5's pretraining length: the default bound of S (relative positions set
/// none).
constexpr int64_t kT5Context = 512;

static void importT5Encoder(ImportContext &ctx, AttnWriter &w) {
  Config &cfg = ctx.config();
  int64_t d = cfg.count("d_model");
  int64_t heads = cfg.count("num_heads");
  int64_t headDim = cfg.count("d_kv");
  int64_t layers = cfg.count("num_layers");
  int64_t inner = cfg.count("d_ff");
  int64_t vocab = cfg.count("vocab_size");
  int64_t buckets = cfg.integer("relative_attention_num_buckets", 32);
  int64_t maxDistance = cfg.integer("relative_attention_max_distance", 128);
  double eps = cfg.positive("layer_norm_epsilon", 1e-6);
  if (d && heads && headDim && heads * headDim != d)
    ctx.unsupported("d_kv", std::to_string(headDim),
                    "num_heads * d_kv = " + std::to_string(heads * headDim) +
                        " differs from d_model " + std::to_string(d) +
                        ", and attnc import reads T5 with heads of "
                        "d_model / num_heads only");
  if (buckets < 4 || buckets % 2)
    cfg.fail("relative_attention_num_buckets",
             std::to_string(buckets) +
                 " must be even and at least 4 (two directions of at least "
                 "2 buckets)");
  else if (maxDistance <= buckets / 4)
    cfg.fail("relative_attention_max_distance",
             std::to_string(maxDistance) + " must exceed the " +
                 std::to_string(buckets / 4) +
                 " distances the buckets hold exactly");
  if (cfg.boolean("is_decoder", false))
    ctx.unsupported("is_decoder", "true",
                    "attnc import reads T5EncoderModel as an encoder only");
  // transformers' T5Config: "gated-ACT" or "ACT"; "gated-gelu" is gelu_new.
  std::string proj = cfg.string("feed_forward_proj", "relu");
  llvm::StringRef rest = proj;
  bool gated = rest.consume_front("gated-");
  std::string actName = proj == "gated-gelu" ? "gelu_new" : rest.str();
  std::string act =
      ctx.activationNamed(actName, "feed_forward_proj's activation", "UP");
  ctx.head({"hidden"});
  int64_t context = ctx.maxContext("T5's pretraining length", kT5Context,
                                   /*learnedPositions=*/false);
  if (ctx.failed())
    return;

  // T5EncoderModel saves the token table as `shared` (encoder.embed_tokens
  // is tied to it); a file may hold either name.
  std::string table =
      ctx.weights().find("shared.weight") ? "shared" : "encoder.embed_tokens";
  std::string L = "encoder.block.{i}.layer.";
  std::string A = L + "0.SelfAttention.";
  std::string F = L + "1.DenseReluDense.";
  std::string bias = "encoder.block.0.layer.0.SelfAttention."
                     "relative_attention_bias";
  Extent D{d, "d_model"}, I{inner, "d_ff"};
  std::string epsText = formatReal(eps);

  w.open("model " + ctx.modelName());
  w.comment("Entry: run (ids and lengths -> the last hidden state). Sequence "
            "b's tokens are 0 .. lengths[b] - 1 (the attention_mask's ones); "
            "padded positions are computed too, as transformers does.");
  w.line("dim B, S <= " + std::to_string(context), ctx.contextNote());
  w.line("input ids : i32[B, S]");
  w.line("input lengths : i32[B]");
  w.blank();
  w.weights(
      {{table + ".weight", {{vocab, "vocab_size"}, D}},
       {bias + ".weight",
        {{buckets, "relative_attention_num_buckets"}, {heads, "num_heads"}}}});
  w.line("x = embedding(ids, " + table + ")");
  w.line("bias = relative_bias(x, " + bias + ",\n                     " +
             "max_distance = " + std::to_string(maxDistance) +
             ", bidirectional = true)",
         "relative_attention_max_distance; block 0's table serves every "
         "block");
  w.blank();
  w.open("repeat " + std::to_string(layers) + " as i", "num_layers");
  std::vector<WeightSpec> specs = {{L + "0.layer_norm.weight", {D}}};
  for (const char *p : {"q", "k", "v", "o"})
    specs.push_back({A + p + ".weight", {D, D}});
  specs.push_back({L + "1.layer_norm.weight", {D}});
  for (const char *p : gated ? std::vector<const char *>{"wi_0", "wi_1"}
                             : std::vector<const char *>{"wi"})
    specs.push_back({F + p + ".weight", {I, D}});
  specs.push_back({F + "wo.weight", {D, I}});
  w.weights(specs, layers);
  w.blank();
  std::string indent(23, ' ');
  w.line("h = rms_norm(x, " + L + "0.layer_norm, eps = " + epsText + ")",
         "layer_norm_epsilon");
  w.line("x = x + self_attention(h, heads = " + std::to_string(heads) +
             ", scale = 1,\n" + indent + "q = " + A + "q,\n" + indent +
             "k = " + A + "k,\n" + indent + "v = " + A + "v,\n" + indent +
             "out = " + A + "o,\n" + indent + "mask = padding(lengths) & bias)",
         "num_heads; T5 does not scale its scores");
  w.line("h = rms_norm(x, " + L + "1.layer_norm, eps = " + epsText + ")",
         "layer_norm_epsilon");
  std::string up = act;
  if (gated) {
    up.replace(up.find("UP"), 2, "linear(h, " + F + "wi_0)");
    up += "\n               * linear(h, " + F + "wi_1)";
  } else {
    up.replace(up.find("UP"), 2, "linear(h, " + F + "wi)");
  }
  w.line("x = x + linear(" + up + ",\n               " + F + "wo)",
         "feed_forward_proj");
  w.close();
  w.blank();
  w.weights({{"encoder.final_layer_norm.weight", {D}}});
  w.line("output hidden = rms_norm(x, encoder.final_layer_norm, eps = " +
             epsText + ")",
         "layer_norm_epsilon");
  w.close();
}

void registerT5(ArchitectureRegistry &registry) {
  registry.add("T5EncoderModel", importT5Encoder);
}

} // namespace attnc::import
