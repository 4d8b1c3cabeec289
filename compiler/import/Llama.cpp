//===- compiler/import/Llama.cpp - Llama, Mistral, Qwen2 ------------------===//
//
// LlamaForCausalLM and the models written as it is: token embeddings,
// pre-norm blocks of RMSNorm, grouped-query attention with rotate_half RoPE
// and a gated MLP, a final RMSNorm and a head (tied to the embeddings when
// tie_word_embeddings says so). Mistral adds a sliding window, Qwen2 biases
// on q, k and v.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Registry.h"
#include "compiler/import/Rope.h"

namespace attnc::import {

namespace {
enum class Variant { Llama, Mistral, Qwen2 };
} // namespace

/// Partial rotary is refused: transformers 5.23.0's Llama rotates whole
/// heads (its default inv_freq ignores partial_rotary_factor, and its
/// scaled ones would not broadcast against a head).
static void refusePartialRotary(ImportContext &ctx) {
  Config &cfg = ctx.config();
  for (llvm::StringRef field :
       {"partial_rotary_factor", "rope_parameters.partial_rotary_factor"})
    if (cfg.has(field) && cfg.positive(field, 1.0) != 1.0)
      ctx.unsupported(field, cfg.find(field)->dump(),
                      ctx.architecture() +
                          " rotates whole heads in transformers 5.23.0");
}

static void importLlamaFamily(ImportContext &ctx, AttnWriter &w,
                              Variant variant) {
  Config &cfg = ctx.config();
  std::string name = ctx.modelName();
  int64_t d = cfg.count("hidden_size");
  int64_t heads = cfg.count("num_attention_heads");
  int64_t layers = cfg.count("num_hidden_layers");
  int64_t inner = cfg.count("intermediate_size");
  int64_t vocab = cfg.count("vocab_size");
  int64_t positions = cfg.count("max_position_embeddings");
  int64_t kvHeads = cfg.integer("num_key_value_heads", heads);
  // head_dim may differ from hidden_size / num_attention_heads (its
  // default, which must then divide).
  int64_t headDim = cfg.integer("head_dim", heads ? d / heads : 0);
  bool ownHeadDim = headDim != (heads ? d / heads : 0);
  if (!cfg.has("head_dim"))
    cfg.divides("num_attention_heads", heads, "hidden_size", d);
  if (cfg.has("head_dim") && headDim <= 0)
    cfg.fail("head_dim", "is " + cfg.find("head_dim")->dump() +
                             ", expected a positive integer");
  if (kvHeads <= 0 || (heads && heads % kvHeads))
    cfg.fail("num_key_value_heads",
             std::to_string(kvHeads) + " does not divide num_attention_heads " +
                 std::to_string(heads));
  double eps = cfg.positive("rms_norm_eps", 1e-6);
  std::string act = ctx.activation("hidden_act", "silu", "GATE");
  refusePartialRotary(ctx);
  RopeArgs rope = readRopeArgs(ctx, 10000);
  bool attentionBias =
      variant == Variant::Llama && cfg.boolean("attention_bias", false);
  bool mlpBias = variant == Variant::Llama && cfg.boolean("mlp_bias", false);
  int64_t window = 0;
  if (variant == Variant::Mistral && cfg.has("sliding_window"))
    window = cfg.count("sliding_window");
  if (variant == Variant::Qwen2) {
    if (cfg.boolean("use_sliding_window", false))
      ctx.unsupported("use_sliding_window", "true",
                      "attnc import reads Qwen2 with full attention in every "
                      "layer only");
    if (const nlohmann::json *types = cfg.find("layer_types"))
      for (const nlohmann::json &t : *types)
        if (t != "full_attention")
          ctx.unsupported("layer_types", types->dump(),
                          "attnc import reads \"full_attention\" layers only");
  }
  bool tied = cfg.boolean("tie_word_embeddings", false);
  std::string head = ctx.head({"logits", "hidden"});
  int64_t context = ctx.maxContext("max_position_embeddings", positions, false);
  if (ctx.failed())
    return;

  std::string p = ctx.prefix({"model.", ""}, "embed_tokens.weight");
  std::string L = p + "layers.{i}.";
  std::string A = L + "self_attn.";
  Extent D{d, "hidden_size"};
  Extent Q{heads * headDim, "num_attention_heads * head_dim"};
  if (!ownHeadDim)
    Q = D;
  Extent KV{kvHeads * headDim, "num_key_value_heads * head_dim"};
  Extent I{inner, "intermediate_size"};
  std::string kvText = std::to_string(kvHeads * headDim);

  w.open("model " + name);
  w.decoderInputs(head, context, ctx.contextNote());
  w.weights({{p + "embed_tokens.weight", {{vocab, "vocab_size"}, D}}});
  w.line("x = embedding(ids, " + p + "embed_tokens)");
  w.blank();
  w.open("repeat " + std::to_string(layers) + " as i", "num_hidden_layers");
  std::vector<WeightSpec> specs = {{L + "input_layernorm.weight", {D}},
                                   {A + "q_proj.weight", {Q, D}}};
  bool qkvBias = attentionBias || variant == Variant::Qwen2;
  if (qkvBias)
    specs.push_back({A + "q_proj.bias", {Q}});
  specs.push_back({A + "k_proj.weight", {KV, D}});
  if (qkvBias)
    specs.push_back({A + "k_proj.bias", {KV}});
  specs.push_back({A + "v_proj.weight", {KV, D}});
  if (qkvBias)
    specs.push_back({A + "v_proj.bias", {KV}});
  specs.push_back({A + "o_proj.weight", {D, Q}});
  if (attentionBias)
    specs.push_back({A + "o_proj.bias", {D}});
  specs.push_back({L + "post_attention_layernorm.weight", {D}});
  for (const char *proj : {"gate_proj", "up_proj"}) {
    specs.push_back({L + "mlp." + proj + ".weight", {I, D}});
    if (mlpBias)
      specs.push_back({L + "mlp." + proj + ".bias", {I}});
  }
  specs.push_back({L + "mlp.down_proj.weight", {D, I}});
  if (mlpBias)
    specs.push_back({L + "mlp.down_proj.bias", {D}});
  w.weights(specs, layers);
  w.kvCache("cache.{i}", "L", kvText, kvHeads);
  w.blank();

  std::string epsText = formatReal(eps);
  std::string indent(23, ' ');
  w.line("h = rms_norm(x, " + L + "input_layernorm, eps = " + epsText + ")",
         "rms_norm_eps");
  std::string mask =
      window ? "causal & window(" + std::to_string(window) + ")" : "causal";
  // The scaling's arguments on lines of their own.
  std::string ropeText = rope.text;
  for (llvm::StringRef arg : {", rope_scaling", ", rope_low_freq_factor"})
    if (size_t at = ropeText.find(arg.str()); at != std::string::npos)
      ropeText.replace(at, 2, ",\n" + indent);
  std::string headDimText =
      ownHeadDim ? ", head_dim = " + std::to_string(headDim) : "";
  w.line("x = x + self_attention(h, heads = " + std::to_string(heads) +
             ", kv_heads = " + std::to_string(kvHeads) + headDimText + ",\n" +
             indent + "q = " + A + "q_proj,\n" + indent + "k = " + A +
             "k_proj,\n" + indent + "v = " + A + "v_proj,\n" + indent +
             "out = " + A + "o_proj,\n" + indent + "mask = " + mask +
             ", rope = half, " + ropeText + ",\n" + indent +
             "cache = cache.{i})",
         std::string("num_attention_heads, num_key_value_heads, ") +
             (ownHeadDim ? "head_dim, " : "") +
             (window ? "sliding_window, " : "") + rope.fields);
  w.line("h = rms_norm(x, " + L + "post_attention_layernorm, eps = " + epsText +
             ")",
         "rms_norm_eps");
  std::string gate = act;
  gate.replace(gate.find("GATE"), 4, "linear(h, " + L + "mlp.gate_proj)");
  w.line("x = x + linear(" + gate + " *\n               linear(h, " + L +
             "mlp.up_proj),\n               " + L + "mlp.down_proj)",
         "hidden_act");
  w.close();
  w.blank();
  w.weights({{p + "norm.weight", {D}}});
  w.line("h = rms_norm(x, " + p + "norm, eps = " + epsText + ")",
         "rms_norm_eps");
  w.decoderHead(head, tied, p + "embed_tokens.weight", {vocab, "vocab_size"},
                D);
  w.close();
}

void registerLlama(ArchitectureRegistry &registry) {
  registry.add("LlamaForCausalLM", [](ImportContext &ctx, AttnWriter &w) {
    importLlamaFamily(ctx, w, Variant::Llama);
  });
  registry.add("MistralForCausalLM", [](ImportContext &ctx, AttnWriter &w) {
    importLlamaFamily(ctx, w, Variant::Mistral);
  });
  registry.add("Qwen2ForCausalLM", [](ImportContext &ctx, AttnWriter &w) {
    importLlamaFamily(ctx, w, Variant::Qwen2);
  });
}

} // namespace attnc::import
