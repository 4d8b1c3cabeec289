//===- compiler/import/Vit.cpp - ViT --------------------------------------===//
//
// ViTModel and ViTForImageClassification's `vit.`: square images cut into
// square patches (a convolution of stride = kernel = patch_size, written as
// reshape and transposes of the pixels and a linear of the reshaped
// convolution weight), the CLS token first, learned position embeddings,
// pre-norm layers and a final LayerNorm: the last hidden state.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Registry.h"

namespace attnc::import {

static void importVit(ImportContext &ctx, AttnWriter &w) {
  Config &cfg = ctx.config();
  std::string name = ctx.modelName();
  int64_t d = cfg.count("hidden_size");
  int64_t heads = cfg.count("num_attention_heads");
  int64_t layers = cfg.count("num_hidden_layers");
  int64_t inner = cfg.count("intermediate_size");
  int64_t image = cfg.count("image_size");
  int64_t patch = cfg.count("patch_size");
  int64_t channels = cfg.count("num_channels");
  double eps = cfg.positive("layer_norm_eps", 1e-12);
  bool qkvBias = cfg.boolean("qkv_bias", true);
  std::string act = ctx.activation("hidden_act", "gelu", "MLP");
  std::string head = ctx.head({"hidden"});
  cfg.divides("num_attention_heads", heads, "hidden_size", d);
  cfg.divides("patch_size", patch, "image_size", image);
  if (ctx.failed())
    return;

  std::string p = ctx.prefix({"vit.", ""}, "embeddings.cls_token");
  std::string E = p + "embeddings.";
  std::string L = p + "encoder.layer.{i}.";
  int64_t grid = image / patch, tokens = grid * grid + 1;
  int64_t patchSize = channels * patch * patch;
  Extent D{d, "hidden_size"}, I{inner, "intermediate_size"};
  std::string epsText = formatReal(eps);
  auto str = [](int64_t v) { return std::to_string(v); };

  w.open("model " + name);
  w.comment("Entry: run (pixel_values [B, num_channels, image_size, "
            "image_size] -> the last hidden state [B, " +
            str(tokens) + ", hidden_size], the CLS token first).");
  w.line("dim B");
  w.line("input pixel_values : f32[B, " + str(channels) + ", " + str(image) +
             ", " + str(image) + "]",
         "num_channels, image_size");
  w.blank();
  w.weights(
      {{E + "cls_token", {{1, "1"}, {1, "1"}, D}},
       {E + "position_embeddings", {{1, "1"}, {tokens, "patches + 1"}, D}},
       {E + "patch_embeddings.projection.weight",
        {D,
         {channels, "num_channels"},
         {patch, "patch_size"},
         {patch, "patch_size"}}},
       {E + "patch_embeddings.projection.bias", {D}}});
  w.comment("The patches [B, rows, columns, channels, patch rows, patch "
            "columns] of the pixels [B, channels, rows x patch rows, columns "
            "x patch columns], flattened as the convolution's weight is.");
  w.line("p = reshape(pixel_values, [B, " + str(channels) + ", " + str(grid) +
             ", " + str(patch) + ", " + str(grid) + ", " + str(patch) + "])",
         "image_size / patch_size patches of patch_size");
  w.line("p = transpose(p, 1, 2)");
  w.line("p = transpose(p, 2, 4)");
  w.line("p = transpose(p, 3, 4)");
  w.line("p = linear(reshape(p, [B, " + str(grid * grid) + ", " +
         str(patchSize) + "]),\n           reshape(" + E +
         "patch_embeddings.projection.weight, [" + str(d) + ", " +
         str(patchSize) + "]),\n           " + E +
         "patch_embeddings.projection.bias)");
  w.line("x = concat(" + E + "cls_token, p, dim = 1) +\n    reshape(" + E +
         "position_embeddings, [" + str(tokens) + ", " + str(d) + "])");
  w.blank();

  w.open("repeat " + str(layers) + " as i", "num_hidden_layers");
  std::vector<WeightSpec> specs = {{L + "layernorm_before.weight", {D}},
                                   {L + "layernorm_before.bias", {D}}};
  for (const char *proj : {"query", "key", "value"}) {
    specs.push_back({L + "attention.attention." + proj + ".weight", {D, D}});
    if (qkvBias)
      specs.push_back({L + "attention.attention." + proj + ".bias", {D}});
  }
  specs.push_back({L + "attention.output.dense.weight", {D, D}});
  specs.push_back({L + "attention.output.dense.bias", {D}});
  specs.push_back({L + "layernorm_after.weight", {D}});
  specs.push_back({L + "layernorm_after.bias", {D}});
  specs.push_back({L + "intermediate.dense.weight", {I, D}});
  specs.push_back({L + "intermediate.dense.bias", {I}});
  specs.push_back({L + "output.dense.weight", {D, I}});
  specs.push_back({L + "output.dense.bias", {D}});
  w.weights(specs, layers);
  w.blank();
  std::string A = L + "attention.attention.";
  std::string indent(23, ' ');
  w.line("h = layer_norm(x, " + L + "layernorm_before, eps = " + epsText + ")",
         "layer_norm_eps");
  w.line("x = x + self_attention(h, heads = " + str(heads) + ",\n" + indent +
             "q = " + A + "query,\n" + indent + "k = " + A + "key,\n" + indent +
             "v = " + A + "value,\n" + indent + "out = " + L +
             "attention.output.dense)",
         "num_attention_heads");
  w.line("h = layer_norm(x, " + L + "layernorm_after, eps = " + epsText + ")",
         "layer_norm_eps");
  std::string mlp = act;
  mlp.replace(mlp.find("MLP"), 3, "linear(h, " + L + "intermediate.dense)");
  w.line("x = x + linear(" + mlp + ",\n               " + L + "output.dense)",
         "hidden_act");
  w.close();
  w.blank();
  w.weights({{p + "layernorm.weight", {D}}, {p + "layernorm.bias", {D}}});
  w.line("output hidden = layer_norm(x, " + p + "layernorm, eps = " + epsText +
             ")",
         "layer_norm_eps");
  w.close();
}

void registerVit(ArchitectureRegistry &registry) {
  for (const char *arch : {"ViTModel", "ViTForImageClassification"})
    registry.add(arch, importVit);
}

} // namespace attnc::import
