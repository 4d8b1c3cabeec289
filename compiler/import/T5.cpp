//===- compiler/import/T5.cpp - T5's encoder and decoder ------------------===//
//
// T5EncoderModel: the token table `shared`, then pre-norm blocks of
// unscaled self-attention over the unpadded keys, plus the bucketed
// relative position bias of block 0's table (computed once, added in every
// block), and a ReLU or gated feed-forward; T5LayerNorm (an RMSNorm) before
// each and at the end. The import gives the last hidden state.
// T5ForConditionalGeneration adds the decoder over `decoder_ids`: the same
// blocks with a one-directional bias of its own and KV caches, and a
// cross-attention (no bias) over the encoder's output whose keys and values
// prefill writes into caches of their own; the head is the token table.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Registry.h"

#include <cmath>

namespace attnc::import {

/// T5's pretraining length: the default bound of S (relative positions set
/// none).
constexpr int64_t kT5Context = 512;

namespace {
/// What the encoder and decoder share.
struct T5Sizes {
  int64_t d, heads, headDim, inner, vocab, buckets, maxDistance;
  std::string eps, act;
  bool gated;
};
} // namespace

/// Reads the config fields both architectures need; false after an error.
static bool readT5(ImportContext &ctx, T5Sizes &s) {
  Config &cfg = ctx.config();
  s.d = cfg.count("d_model");
  s.heads = cfg.count("num_heads");
  s.headDim = cfg.count("d_kv");
  s.inner = cfg.count("d_ff");
  s.vocab = cfg.count("vocab_size");
  s.buckets = cfg.integer("relative_attention_num_buckets", 32);
  s.maxDistance = cfg.integer("relative_attention_max_distance", 128);
  s.eps = formatReal(cfg.positive("layer_norm_epsilon", 1e-6));
  if (s.d && s.heads && s.headDim && s.heads * s.headDim != s.d)
    ctx.unsupported(
        "d_kv", std::to_string(s.headDim),
        "num_heads * d_kv = " + std::to_string(s.heads * s.headDim) +
            " differs from d_model " + std::to_string(s.d) +
            ", and attnc import reads T5 with heads of "
            "d_model / num_heads only");
  if (s.buckets < 4 || s.buckets % 2)
    cfg.fail("relative_attention_num_buckets",
             std::to_string(s.buckets) +
                 " must be even and at least 4 (two directions of at least "
                 "2 buckets)");
  else if (s.maxDistance <= s.buckets / 4)
    cfg.fail("relative_attention_max_distance",
             std::to_string(s.maxDistance) + " must exceed the " +
                 std::to_string(s.buckets / 4) +
                 " distances the buckets hold exactly");
  // transformers' T5Config: "gated-ACT" or "ACT"; "gated-gelu" is gelu_new.
  std::string proj = cfg.string("feed_forward_proj", "relu");
  llvm::StringRef rest = proj;
  s.gated = rest.consume_front("gated-");
  std::string actName = proj == "gated-gelu" ? "gelu_new" : rest.str();
  s.act = ctx.activationNamed(actName, "feed_forward_proj's activation", "UP");
  return !ctx.failed();
}

/// The token table: T5's files save it as `shared` (encoder.embed_tokens
/// and decoder.embed_tokens are tied to it); a file may hold either name.
static std::string tokenTable(ImportContext &ctx) {
  return ctx.weights().find("shared.weight") ? "shared"
                                             : "encoder.embed_tokens";
}

/// The table of STACK's relative position bias: block 0's.
static std::string biasTable(llvm::StringRef stack) {
  return stack.str() + ".block.0.layer.0.SelfAttention.relative_attention_bias";
}

/// Declares `stack`'s bias table, then writes `x = embedding(ids, table)`
/// and the bias over it as `name`.
static void writeEmbedding(AttnWriter &w, const T5Sizes &s,
                           llvm::StringRef stack, llvm::StringRef ids,
                           llvm::StringRef table, llvm::StringRef name,
                           bool bidirectional) {
  std::string bias = biasTable(stack);
  w.weights({{bias + ".weight",
              {{s.buckets, "relative_attention_num_buckets"},
               {s.heads, "num_heads"}}}});
  w.line("x = embedding(" + ids + ", " + table + ")");
  std::string indent(name.size() + 17, ' ');
  w.line(name + " = relative_bias(x, " + bias + ",\n" + indent +
             "max_distance = " + std::to_string(s.maxDistance) +
             ", bidirectional = " + (bidirectional ? "true" : "false") + ")",
         "relative_attention_max_distance; block 0's table serves every "
         "block");
}

/// `x = x + FF(rms_norm(x))`: the feed-forward of layer `layer` of a block.
static void writeFeedForward(AttnWriter &w, const T5Sizes &s, llvm::StringRef L,
                             int layer) {
  std::string norm = L.str() + std::to_string(layer) + ".layer_norm";
  std::string F = L.str() + std::to_string(layer) + ".DenseReluDense.";
  w.line("h = rms_norm(x, " + norm + ", eps = " + s.eps + ")",
         "layer_norm_epsilon");
  std::string up = s.act;
  if (s.gated) {
    up.replace(up.find("UP"), 2, "linear(h, " + F + "wi_0)");
    up += "\n               * linear(h, " + F + "wi_1)";
  } else {
    up.replace(up.find("UP"), 2, "linear(h, " + F + "wi)");
  }
  w.line("x = x + linear(" + up + ",\n               " + F + "wo)",
         "feed_forward_proj");
}

/// The weights of a feed-forward at `L` + `layer`.
static void feedForwardSpecs(std::vector<WeightSpec> &specs, const T5Sizes &s,
                             llvm::StringRef L, int layer) {
  Extent D{s.d, "d_model"}, I{s.inner, "d_ff"};
  std::string F = L.str() + std::to_string(layer) + ".DenseReluDense.";
  specs.push_back(
      {L.str() + std::to_string(layer) + ".layer_norm.weight", {D}});
  for (const char *p : s.gated ? std::vector<const char *>{"wi_0", "wi_1"}
                               : std::vector<const char *>{"wi"})
    specs.push_back({F + p + ".weight", {I, D}});
  specs.push_back({F + "wo.weight", {D, I}});
}

/// The attention of layer `layer` of a block: `x = x + ATTN(rms_norm(x),
/// ...)` with `call` the attention's first arguments ("self_attention(h")
/// and `module` the attention's module ("SelfAttention").
static void writeAttention(AttnWriter &w, const T5Sizes &s, llvm::StringRef L,
                           int layer, llvm::StringRef call,
                           llvm::StringRef module, llvm::StringRef rest) {
  std::string at = L.str() + std::to_string(layer) + "." + module.str() + ".";
  w.line("h = rms_norm(x, " + L + std::to_string(layer) +
             ".layer_norm, eps = " + s.eps + ")",
         "layer_norm_epsilon");
  // Aligned under the attention's first argument ("x = x + " is 8).
  std::string indent(8 + call.find('(') + 1, ' ');
  w.line("x = x + " + call + ", heads = " + std::to_string(s.heads) +
             ", scale = 1,\n" + indent + "q = " + at + "q,\n" + indent +
             "k = " + at + "k,\n" + indent + "v = " + at + "v,\n" + indent +
             "out = " + at + "o,\n" + indent + rest + ")",
         "num_heads; T5 does not scale its scores");
}

/// The weights of an attention at `L` + `layer` + `module`.
static void attentionSpecs(std::vector<WeightSpec> &specs, const T5Sizes &s,
                           llvm::StringRef L, int layer,
                           llvm::StringRef module) {
  Extent D{s.d, "d_model"};
  std::string at = L.str() + std::to_string(layer) + ".";
  specs.push_back({at + "layer_norm.weight", {D}});
  for (const char *p : {"q", "k", "v", "o"})
    specs.push_back({at + module.str() + "." + p + ".weight", {D, D}});
}

/// The encoder over `ids`: its blocks and final norm, into `x`.
static void writeEncoder(AttnWriter &w, const T5Sizes &s, int64_t layers,
                         llvm::StringRef table) {
  writeEmbedding(w, s, "encoder", "ids", table, "bias", /*bidirectional=*/true);
  w.blank();
  std::string L = "encoder.block.{i}.layer.";
  w.open("repeat " + std::to_string(layers) + " as i", "num_layers");
  std::vector<WeightSpec> specs;
  attentionSpecs(specs, s, L, 0, "SelfAttention");
  feedForwardSpecs(specs, s, L, 1);
  w.weights(specs, layers);
  w.blank();
  writeAttention(w, s, L, 0, "self_attention(h", "SelfAttention",
                 "mask = padding(lengths) & bias");
  writeFeedForward(w, s, L, 1);
  w.close();
  w.blank();
  w.weights({{"encoder.final_layer_norm.weight", {{s.d, "d_model"}}}});
}

static void importT5Encoder(ImportContext &ctx, AttnWriter &w) {
  Config &cfg = ctx.config();
  T5Sizes s;
  int64_t layers = cfg.count("num_layers");
  if (cfg.boolean("is_decoder", false))
    ctx.unsupported("is_decoder", "true",
                    "attnc import reads T5EncoderModel as an encoder only");
  bool ok = readT5(ctx, s);
  ctx.head({"hidden"});
  int64_t context = ctx.maxContext("T5's pretraining length", kT5Context,
                                   /*learnedPositions=*/false);
  if (!ok || ctx.failed())
    return;

  w.open("model " + ctx.modelName());
  w.comment("Entry: run (ids and lengths -> the last hidden state). Sequence "
            "b's tokens are 0 .. lengths[b] - 1 (the attention_mask's ones); "
            "padded positions are computed too, as transformers does.");
  w.line("dim B, S <= " + std::to_string(context), ctx.contextNote());
  w.line("input ids : i32[B, S]");
  w.line("input lengths : i32[B]");
  w.blank();
  std::string table = tokenTable(ctx);
  w.weights({{table + ".weight", {{s.vocab, "vocab_size"}, {s.d, "d_model"}}}});
  writeEncoder(w, s, layers, table);
  w.line("output hidden = rms_norm(x, encoder.final_layer_norm, eps = " +
             s.eps + ")",
         "layer_norm_epsilon");
  w.close();
}

static void importT5Conditional(ImportContext &ctx, AttnWriter &w) {
  Config &cfg = ctx.config();
  T5Sizes s;
  int64_t layers = cfg.count("num_layers");
  int64_t decoderLayers = cfg.integer("num_decoder_layers", layers);
  bool ok = readT5(ctx, s);
  // transformers 5 scales the decoder's output by d_model^-0.5 unless the
  // saved config said tie_word_embeddings false (T5 v1.1), and then reads
  // the head from lm_head.
  bool scaleOutput = cfg.has("scale_decoder_outputs")
                         ? cfg.boolean("scale_decoder_outputs", true)
                         : cfg.boolean("tie_word_embeddings", true);
  std::string head = ctx.head({"logits", "hidden"});
  int64_t context = ctx.maxContext("T5's pretraining length", kT5Context,
                                   /*learnedPositions=*/false);
  if (!ok || ctx.failed())
    return;

  std::string dText = std::to_string(s.d);
  std::string table = tokenTable(ctx);
  w.open("model " + ctx.modelName());
  w.encoderDecoderInputs(head, context, ctx.contextNote());
  w.weights({{table + ".weight", {{s.vocab, "vocab_size"}, {s.d, "d_model"}}}});
  writeEncoder(w, s, layers, table);
  w.line("e = rms_norm(x, encoder.final_layer_norm, eps = " + s.eps + ")",
         "layer_norm_epsilon");
  w.blank();

  writeEmbedding(w, s, "decoder", "decoder_ids", table, "self_bias",
                 /*bidirectional=*/false);
  w.blank();
  std::string L = "decoder.block.{i}.layer.";
  w.open("repeat " + std::to_string(decoderLayers) + " as i",
         "num_decoder_layers");
  std::vector<WeightSpec> specs;
  attentionSpecs(specs, s, L, 0, "SelfAttention");
  attentionSpecs(specs, s, L, 1, "EncDecAttention");
  feedForwardSpecs(specs, s, L, 2);
  w.weights(specs, decoderLayers);
  w.kvCache("cache.{i}", "L", dText, s.heads);
  w.kvCache("cross.{i}", "T", dText, /*kvHeads=*/0);
  w.blank();
  writeAttention(w, s, L, 0, "self_attention(h", "SelfAttention",
                 "mask = causal & self_bias, cache = cache.{i}");
  writeAttention(w, s, L, 1, "cross_attention(h, e", "EncDecAttention",
                 "mask = padding(lengths), cache = cross.{i}");
  writeFeedForward(w, s, L, 2);
  w.close();
  w.blank();
  w.weights({{"decoder.final_layer_norm.weight", {{s.d, "d_model"}}}});
  std::string out =
      "rms_norm(x, decoder.final_layer_norm, eps = " + s.eps + ")";
  if (head == "hidden") {
    w.line("output hidden = " + out, "layer_norm_epsilon");
  } else if (scaleOutput) {
    w.line("h = " + out, "layer_norm_epsilon");
    w.line("output logits = linear(h * " +
               formatReal(std::pow(double(s.d), -0.5)) + ", " + table + ")",
           "the tied head: d_model^-0.5 times the token table");
  } else {
    w.line("h = " + out, "layer_norm_epsilon");
    w.weights(
        {{"lm_head.weight", {{s.vocab, "vocab_size"}, {s.d, "d_model"}}}});
    w.line("output logits = linear(h, lm_head)", "tie_word_embeddings false");
  }
  w.close();
}

void registerT5(ArchitectureRegistry &registry) {
  registry.add("T5EncoderModel", importT5Encoder);
  registry.add("T5ForConditionalGeneration", importT5Conditional);
}

} // namespace attnc::import
