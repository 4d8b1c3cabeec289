//===- compiler/import/Gemma2.cpp - Gemma 2 -------------------------------===//
//
// Gemma2ForCausalLM: token embeddings scaled by sqrt(hidden_size), blocks
// of four (1 + w) RMSNorms around grouped-query attention of a head_dim of
// its own (scale query_pre_attn_scalar^-0.5, soft-capped scores, a sliding
// window in the layers layer_types marks "sliding_attention") and a GELU
// (tanh) gated MLP, a final norm and the tied head, soft-capped. Layers
// with different masks cannot share one `repeat` body, so the weights are
// declared in a repeat and the layers written out.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/AttnWriter.h"
#include "compiler/import/Registry.h"
#include "compiler/import/Rope.h"

#include <cmath>
#include <cstring>

namespace attnc::import {

/// `value` rounded to the precision of a `dtype` tensor, as torch's
/// `tensor.to(dtype)` rounds (to nearest even).
static double roundTo(double value, attn::safetensors::DType dtype) {
  float f = float(value);
  if (dtype == attn::safetensors::DType::F32)
    return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (dtype == attn::safetensors::DType::BF16) {
    bits += 0x7fff + ((bits >> 16) & 1);
    bits &= 0xffff0000u;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  // F16: 11 significant bits (the normalizers here are normal numbers).
  int exponent;
  double mantissa = std::frexp(double(f), &exponent);
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11);
}

static void importGemma2(ImportContext &ctx, AttnWriter &w) {
  Config &cfg = ctx.config();
  std::string name = ctx.modelName();
  int64_t d = cfg.count("hidden_size");
  int64_t heads = cfg.count("num_attention_heads");
  int64_t layers = cfg.count("num_hidden_layers");
  int64_t inner = cfg.count("intermediate_size");
  int64_t vocab = cfg.count("vocab_size");
  int64_t positions = cfg.integer("max_position_embeddings", 8192);
  int64_t kvHeads = cfg.integer("num_key_value_heads", 4);
  int64_t headDim = cfg.integer("head_dim", 256);
  if (kvHeads <= 0 || (heads && heads % kvHeads))
    cfg.fail("num_key_value_heads",
             std::to_string(kvHeads) + " does not divide num_attention_heads " +
                 std::to_string(heads));
  if (headDim <= 0)
    cfg.fail("head_dim", "must be a positive integer");
  double eps = cfg.positive("rms_norm_eps", 1e-6);
  std::string act =
      ctx.activation("hidden_activation", "gelu_pytorch_tanh", "GATE");
  RopeArgs rope = readRopeArgs(ctx, 10000);
  double scalar = cfg.positive("query_pre_attn_scalar", 256);
  double attnCap = cfg.positive("attn_logit_softcapping", 50);
  double finalCap = cfg.positive("final_logit_softcapping", 30);
  int64_t window = cfg.integer("sliding_window", 4096);
  if (cfg.boolean("attention_bias", false))
    ctx.unsupported("attention_bias", "true",
                    "attnc import reads Gemma 2 without attention biases");
  if (cfg.boolean("use_bidirectional_attention", false))
    ctx.unsupported("use_bidirectional_attention", "true",
                    "attnc import reads Gemma 2 as a causal decoder only");
  // transformers' default: sliding, full, sliding, ... from layer 0.
  std::vector<bool> sliding;
  for (int64_t i = 0; i < layers; ++i)
    sliding.push_back((i + 1) % 2 != 0);
  if (const nlohmann::json *types = cfg.find("layer_types")) {
    if (!types->is_array() || int64_t(types->size()) != layers) {
      cfg.fail("layer_types", "must list one type per layer");
    } else {
      for (int64_t i = 0; i < layers; ++i) {
        const nlohmann::json &t = (*types)[i];
        if (t == "sliding_attention" || t == "full_attention")
          sliding[i] = t == "sliding_attention";
        else
          ctx.unsupported("layer_types", types->dump(),
                          "attnc import reads \"sliding_attention\" and "
                          "\"full_attention\" layers");
      }
      cfg.record("layer_types", types->dump(), false);
    }
  }
  if (!cfg.boolean("tie_word_embeddings", true))
    ctx.unsupported("tie_word_embeddings", "false",
                    "attnc import reads Gemma 2 with its tied head");
  std::string head = ctx.head({"logits", "hidden"});
  int64_t context = ctx.maxContext("max_position_embeddings", positions, false);
  if (ctx.failed())
    return;

  std::string p = ctx.prefix({"model.", ""}, "embed_tokens.weight");
  std::string table = p + "embed_tokens.weight";
  // Gemma2TextScaledWordEmbedding multiplies by sqrt(hidden_size) cast to
  // the embeddings' dtype (bf16 for a bf16 checkpoint).
  const attn::safetensors::Tensor *tableTensor = ctx.weights().find(table);
  double normalizer =
      roundTo(std::sqrt(double(d)),
              tableTensor ? tableTensor->dtype : attn::safetensors::DType::F32);
  std::string L = p + "layers.{i}.";
  std::string A = L + "self_attn.";
  Extent D{d, "hidden_size"};
  Extent Q{heads * headDim, "num_attention_heads * head_dim"};
  Extent KV{kvHeads * headDim, "num_key_value_heads * head_dim"};
  Extent I{inner, "intermediate_size"};
  std::string kvText = std::to_string(kvHeads * headDim);

  w.open("model " + name);
  w.decoderInputs(head, context, ctx.contextNote());
  w.weights({{table, {{vocab, "vocab_size"}, D}}});
  w.line("x = embedding(ids, " + p + "embed_tokens) * " +
             formatReal(normalizer),
         "sqrt(hidden_size) in the embeddings' dtype");
  w.blank();
  w.open("repeat " + std::to_string(layers) + " as i",
         "num_hidden_layers: the weights; the layers follow, written out as "
         "their masks differ");
  w.weights({{L + "input_layernorm.weight", {D}},
             {A + "q_proj.weight", {Q, D}},
             {A + "k_proj.weight", {KV, D}},
             {A + "v_proj.weight", {KV, D}},
             {A + "o_proj.weight", {D, Q}},
             {L + "post_attention_layernorm.weight", {D}},
             {L + "pre_feedforward_layernorm.weight", {D}},
             {L + "mlp.gate_proj.weight", {I, D}},
             {L + "mlp.up_proj.weight", {I, D}},
             {L + "mlp.down_proj.weight", {D, I}},
             {L + "post_feedforward_layernorm.weight", {D}}},
            layers);
  w.kvCache("cache.{i}", "L", kvText, kvHeads);
  w.close();

  std::string norm = ", eps = " + formatReal(eps) + ", offset = 1)";
  std::string indent(19, ' ');
  // query_pre_attn_scalar^-0.5 in double, as Python computes it; the
  // attention rounds it to f32 as torch's f32 scores do.
  std::string scale = formatReal(std::pow(scalar, -0.5));
  for (int64_t i = 0; i < layers; ++i) {
    std::string l = layerName(L, i), a = layerName(A, i);
    std::string c = "cache." + std::to_string(i);
    std::string mask = sliding[i]
                           ? "causal & window(" + std::to_string(window) + ")"
                           : "causal";
    w.blank();
    w.comment("layer " + std::to_string(i) + ": " +
              (sliding[i] ? "sliding_attention" : "full_attention"));
    w.line("h = rms_norm(x, " + l + "input_layernorm" + norm,
           "rms_norm_eps; Gemma2RMSNorm scales by 1 + weight");
    w.line("h = self_attention(h, heads = " + std::to_string(heads) +
               ", kv_heads = " + std::to_string(kvHeads) +
               ", head_dim = " + std::to_string(headDim) + ",\n" + indent +
               "q = " + a + "q_proj, k = " + a + "k_proj,\n" + indent +
               "v = " + a + "v_proj, out = " + a + "o_proj,\n" + indent +
               "mask = " + mask + ", scale = " + scale +
               ", softcap = " + formatReal(attnCap) + ",\n" + indent +
               "rope = half, " + rope.text + ", cache = " + c + ")",
           std::string("num_attention_heads, num_key_value_heads, head_dim, ") +
               (sliding[i] ? "sliding_window, " : "") +
               "query_pre_attn_scalar, attn_logit_softcapping, " + rope.fields);
    w.line("x = x + rms_norm(h, " + l + "post_attention_layernorm" + norm);
    w.line("h = rms_norm(x, " + l + "pre_feedforward_layernorm" + norm);
    std::string gate = act;
    gate.replace(gate.find("GATE"), 4, "linear(h, " + l + "mlp.gate_proj)");
    w.line("h = linear(" + gate + " *\n           linear(h, " + l +
               "mlp.up_proj),\n           " + l + "mlp.down_proj)",
           "hidden_activation");
    w.line("x = x + rms_norm(h, " + l + "post_feedforward_layernorm" + norm);
  }
  w.blank();
  w.weights({{p + "norm.weight", {D}}});
  w.line("h = rms_norm(x, " + p + "norm" + norm, "rms_norm_eps");
  if (head == "hidden")
    w.line("output hidden = h");
  else
    w.line("output logits = softcap(linear(h, " + table + "), " +
               formatReal(finalCap) + ")",
           "tied head, final_logit_softcapping");
  w.close();
}

void registerGemma2(ArchitectureRegistry &registry) {
  registry.add("Gemma2ForCausalLM", importGemma2);
}

} // namespace attnc::import
