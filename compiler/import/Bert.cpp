//===- compiler/import/Bert.cpp - BERT, RoBERTa, DistilBERT ---------------===//
//
// The post-norm encoders: word (+ token type) + position embeddings and a
// LayerNorm, then layers of self-attention over the unpadded keys and a
// GELU MLP, each added and normalised. The import gives the last hidden
// state (BertModel's last_hidden_state) of a base model or of a task
// model's base (`bert.`, `roberta.`, `distilbert.`), or with --head=logits
// a MaskedLM model's token logits (its head: dense, activation, LayerNorm
// and the decoder tied to the word embeddings, with a bias of its own).
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Registry.h"

namespace attnc::import {

namespace {
enum class Variant { Bert, Roberta, DistilBert };

/// The names of one layer's modules under its prefix.
struct LayerNames {
  const char *q, *k, *v, *out, *attnNorm, *up, *down, *mlpNorm;
};

const LayerNames kBertLayer = {"attention.self.query",
                               "attention.self.key",
                               "attention.self.value",
                               "attention.output.dense",
                               "attention.output.LayerNorm",
                               "intermediate.dense",
                               "output.dense",
                               "output.LayerNorm"};
const LayerNames kDistilBertLayer = {"attention.q_lin", "attention.k_lin",
                                     "attention.v_lin", "attention.out_lin",
                                     "sa_layer_norm",   "ffn.lin1",
                                     "ffn.lin2",        "output_layer_norm"};

/// The names of a MaskedLM head's modules (BertLMPredictionHead,
/// RobertaLMHead, DistilBertForMaskedLM's vocab_*), at the checkpoint's top
/// level.
struct HeadNames {
  const char *dense, *norm, *decoder, *bias;
};
const HeadNames kBertHead = {"cls.predictions.transform.dense",
                             "cls.predictions.transform.LayerNorm",
                             "cls.predictions.decoder", "cls.predictions.bias"};
const HeadNames kRobertaHead = {"lm_head.dense", "lm_head.layer_norm",
                                "lm_head.decoder", "lm_head.bias"};
const HeadNames kDistilBertHead = {"vocab_transform", "vocab_layer_norm",
                                   "vocab_projector", "vocab_projector.bias"};

bool isMaskedLM(llvm::StringRef architecture) {
  return architecture.ends_with("ForMaskedLM");
}
} // namespace

/// The MaskedLM head over the last hidden state `x`: `output logits`.
static void writeMaskedLMHead(ImportContext &ctx, AttnWriter &w,
                              Variant variant, llvm::StringRef table,
                              Extent vocab, Extent D, llvm::StringRef epsText) {
  Config &cfg = ctx.config();
  const HeadNames &n = variant == Variant::Bert      ? kBertHead
                       : variant == Variant::Roberta ? kRobertaHead
                                                     : kDistilBertHead;
  // RobertaLMHead calls gelu() whatever hidden_act says; BERT's transform
  // and DistilBERT's head use the config's activation.
  std::string act =
      variant == Variant::Roberta
          ? std::string("gelu(MLP)")
          : ctx.activation(variant == Variant::DistilBert ? "activation"
                                                          : "hidden_act",
                           "gelu", "MLP");
  bool tied = cfg.boolean("tie_word_embeddings", true);
  // The decoder's bias is tied to the head's own `bias` parameter; a
  // checkpoint saves one of the two names.
  std::string bias = n.bias;
  if (!ctx.weights().find(bias) &&
      ctx.weights().find(std::string(n.decoder) + ".bias"))
    bias = std::string(n.decoder) + ".bias";
  std::vector<WeightSpec> specs = {{std::string(n.dense) + ".weight", {D, D}},
                                   {std::string(n.dense) + ".bias", {D}},
                                   {std::string(n.norm) + ".weight", {D}},
                                   {std::string(n.norm) + ".bias", {D}},
                                   {bias, {vocab}}};
  if (!tied)
    specs.push_back({std::string(n.decoder) + ".weight", {vocab, D}});
  w.weights(specs);
  std::string mlp = act;
  mlp.replace(mlp.find("MLP"), 3, "linear(x, " + std::string(n.dense) + ")");
  w.line("t = layer_norm(" + mlp + ",\n               " + n.norm +
             ", eps = " + epsText.str() + ")",
         variant == Variant::DistilBert ? "the MaskedLM head; eps 1e-12"
         : variant == Variant::Roberta  ? "RobertaLMHead: gelu, layer_norm_eps"
                                        : "the MaskedLM head: hidden_act, "
                                          "layer_norm_eps");
  std::string decoder = tied ? table.str() : std::string(n.decoder) + ".weight";
  w.line("output logits = linear(t, " + decoder + ", " + bias + ")",
         tied ? "tie_word_embeddings: the decoder is the token table"
              : "tie_word_embeddings false");
}

static void importEncoder(ImportContext &ctx, AttnWriter &w, Variant variant) {
  Config &cfg = ctx.config();
  bool distil = variant == Variant::DistilBert;
  std::string name = ctx.modelName();
  const char *dField = distil ? "dim" : "hidden_size";
  const char *headsField = distil ? "n_heads" : "num_attention_heads";
  const char *innerField = distil ? "hidden_dim" : "intermediate_size";
  int64_t d = cfg.count(dField);
  int64_t heads = cfg.count(headsField);
  int64_t layers = cfg.count(distil ? "n_layers" : "num_hidden_layers");
  int64_t inner = cfg.count(innerField);
  int64_t vocab = cfg.count("vocab_size");
  int64_t positions = cfg.count("max_position_embeddings");
  int64_t types = distil ? 0 : cfg.count("type_vocab_size");
  cfg.divides(headsField, heads, dField, d);
  // DistilBERT's LayerNorms are built with eps 1e-12; its config has no
  // field for it.
  double eps = distil ? 1e-12 : cfg.positive("layer_norm_eps", 1e-12);
  std::string act =
      ctx.activation(distil ? "activation" : "hidden_act", "gelu", "MLP");
  if (!distil) {
    std::string type = cfg.string("position_embedding_type", "absolute");
    if (type != "absolute")
      ctx.unsupported("position_embedding_type", "\"" + type + "\"",
                      "attnc import reads \"absolute\" position embeddings "
                      "only");
    if (cfg.boolean("is_decoder", false))
      ctx.unsupported("is_decoder", "true",
                      "attnc import reads " + ctx.architecture() +
                          " as an encoder only");
  }
  // RoBERTa numbers its positions from padding_idx + 1, so its table has
  // that many rows more than the longest sequence.
  int64_t offset = 0;
  if (variant == Variant::Roberta)
    offset = cfg.integer("pad_token_id", 1) + 1;
  std::string head = isMaskedLM(ctx.architecture())
                         ? ctx.head({"hidden", "logits"})
                         : ctx.head({"hidden"});
  int64_t context = 0;
  if (positions && positions <= offset)
    cfg.fail("max_position_embeddings",
             std::to_string(positions) + " leaves no position after " +
                 "pad_token_id + 1 = " + std::to_string(offset));
  else
    context = ctx.maxContext(offset ? "(max_position_embeddings - "
                                      "pad_token_id - 1)"
                                    : "max_position_embeddings",
                             positions - offset, true);
  if (ctx.failed())
    return;

  const char *base = variant == Variant::Bert      ? "bert."
                     : variant == Variant::Roberta ? "roberta."
                                                   : "distilbert.";
  std::string p = ctx.prefix({base, ""}, "embeddings.word_embeddings.weight");
  std::string E = p + "embeddings.";
  std::string L =
      p + (distil ? "transformer.layer.{i}." : "encoder.layer.{i}.");
  const LayerNames &n = distil ? kDistilBertLayer : kBertLayer;
  Extent D{d, dField}, I{inner, innerField};
  std::string epsText = formatReal(eps);
  const char *epsNote = distil ? "DistilBERT's eps" : "layer_norm_eps";

  w.open("model " + name);
  w.comment("Entry: run (ids" + std::string(distil ? "" : ", token types") +
            (offset ? ", positions" : "") + " and lengths -> " +
            (head == "logits" ? "the MaskedLM head's token logits"
                              : "the last hidden state") +
            "). Sequence b's tokens are "
            "0 .. lengths[b] - 1 (the attention_mask's ones); padded "
            "positions are computed too, as transformers does.");
  w.line("dim B, S <= " + std::to_string(context), ctx.contextNote());
  w.line("input ids : i32[B, S]");
  if (!distil)
    w.line("input token_type_ids : i32[B, S]");
  w.line("input lengths : i32[B]");
  if (offset)
    w.line("input position_ids : i32[B, S]",
           "pad_token_id + 1 + j for token j, pad_token_id at padding");
  w.blank();
  std::vector<WeightSpec> specs = {
      {E + "word_embeddings.weight", {{vocab, "vocab_size"}, D}},
      {E + "position_embeddings.weight",
       {{positions, "max_position_embeddings"}, D}}};
  if (!distil)
    specs.push_back(
        {E + "token_type_embeddings.weight", {{types, "type_vocab_size"}, D}});
  specs.push_back({E + "LayerNorm.weight", {D}});
  specs.push_back({E + "LayerNorm.bias", {D}});
  w.weights(specs);
  std::string pos = offset ? "position_ids" : "positions(S)";
  w.line("x = layer_norm(embedding(ids, " + E + "word_embeddings)\n" +
             (distil ? ""
                     : "               + embedding(token_type_ids, " + E +
                           "token_type_embeddings)\n") +
             "               + embedding(" + pos + ", " + E +
             "position_embeddings),\n               " + E +
             "LayerNorm, eps = " + epsText + ")",
         epsNote);
  w.blank();

  w.open("repeat " + std::to_string(layers) + " as i",
         distil ? "n_layers" : "num_hidden_layers");
  specs.clear();
  for (const char *proj : {n.q, n.k, n.v, n.out}) {
    specs.push_back({L + proj + ".weight", {D, D}});
    specs.push_back({L + proj + ".bias", {D}});
  }
  for (const char *part : {".weight", ".bias"})
    specs.push_back({L + n.attnNorm + part, {D}});
  specs.push_back({L + n.up + ".weight", {I, D}});
  specs.push_back({L + n.up + ".bias", {I}});
  specs.push_back({L + n.down + ".weight", {D, I}});
  specs.push_back({L + n.down + ".bias", {D}});
  for (const char *part : {".weight", ".bias"})
    specs.push_back({L + n.mlpNorm + part, {D}});
  w.weights(specs, layers);
  w.blank();
  std::string indent(19, ' ');
  w.line("a = self_attention(x, heads = " + std::to_string(heads) + ",\n" +
             indent + "q = " + L + n.q + ",\n" + indent + "k = " + L + n.k +
             ",\n" + indent + "v = " + L + n.v + ",\n" + indent + "out = " + L +
             n.out + ",\n" + indent + "mask = padding(lengths))",
         headsField);
  w.line("x = layer_norm(x + a, " + L + n.attnNorm + ", eps = " + epsText + ")",
         epsNote);
  std::string mlp = act;
  mlp.replace(mlp.find("MLP"), 3, "linear(x, " + L + n.up + ")");
  w.line("f = linear(" + mlp + ",\n           " + L + n.down + ")",
         distil ? "activation" : "hidden_act");
  w.line("x = layer_norm(x + f, " + L + n.mlpNorm + ", eps = " + epsText + ")",
         epsNote);
  w.close();
  w.blank();
  if (head == "logits")
    writeMaskedLMHead(ctx, w, variant, E + "word_embeddings.weight",
                      {vocab, "vocab_size"}, D, epsText);
  else
    w.line("output hidden = x");
  w.close();
}

void registerBert(ArchitectureRegistry &registry) {
  for (const char *arch : {"BertModel", "BertForMaskedLM"})
    registry.add(arch, [](ImportContext &ctx, AttnWriter &w) {
      importEncoder(ctx, w, Variant::Bert);
    });
  for (const char *arch : {"RobertaModel", "RobertaForMaskedLM"})
    registry.add(arch, [](ImportContext &ctx, AttnWriter &w) {
      importEncoder(ctx, w, Variant::Roberta);
    });
  for (const char *arch : {"DistilBertModel", "DistilBertForMaskedLM"})
    registry.add(arch, [](ImportContext &ctx, AttnWriter &w) {
      importEncoder(ctx, w, Variant::DistilBert);
    });
}

} // namespace attnc::import
