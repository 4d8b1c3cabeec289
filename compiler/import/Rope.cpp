//===- compiler/import/Rope.cpp - a config's rotary embeddings ------------===//
//
// Part of attnc. Rope.h: rope_parameters / rope_scaling as attention
// arguments, as transformers 5.23.0's modeling_rope_utils.py reads them.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Rope.h"

namespace attnc::import {

RopeArgs readRopeArgs(ImportContext &ctx, double defaultTheta) {
  Config &cfg = ctx.config();
  // transformers 5 keeps everything in rope_parameters; older configs the
  // base in rope_theta and the scaling in rope_scaling (type or rope_type).
  std::string where = cfg.has("rope_parameters") ? "rope_parameters" : "";
  if (where.empty() && cfg.has("rope_scaling"))
    where = "rope_scaling";
  std::string type = "default";
  std::string typeField;
  if (!where.empty()) {
    for (const char *key : {"rope_type", "type"})
      if (cfg.has(where + "." + key)) {
        typeField = where + "." + key;
        type = cfg.string(typeField, "default");
        break;
      }
  }
  std::string thetaField =
      where == "rope_parameters" ? "rope_parameters.rope_theta" : "rope_theta";
  RopeArgs args;
  args.text =
      "rope_theta = " + formatReal(cfg.positive(thetaField, defaultTheta));
  args.fields = "rope_theta";
  if (type == "default")
    return args;
  if (type != "linear" && type != "llama3") {
    ctx.unsupported(typeField, "\"" + type + "\"",
                    "attnc import reads rope_type \"default\", \"linear\" "
                    "and \"llama3\"");
    return args;
  }
  std::string p = where + ".";
  args.text += ", rope_scaling = " + type +
               ", rope_factor = " + formatReal(cfg.positive(p + "factor", 0));
  if (!cfg.has(p + "factor"))
    cfg.fail(p + "factor", "is missing; rope_type \"" + type + "\" needs it");
  args.fields += ", " + where;
  if (type == "llama3") {
    for (const char *key : {"low_freq_factor", "high_freq_factor",
                            "original_max_position_embeddings"})
      if (!cfg.has(p + key))
        cfg.fail(p + key, "is missing; rope_type \"llama3\" needs it");
    double low = cfg.positive(p + "low_freq_factor", 1);
    double high = cfg.positive(p + "high_freq_factor", 4);
    if (!(high > low))
      cfg.fail(p + "high_freq_factor", "is " + formatReal(high) +
                                           "; it must exceed low_freq_factor " +
                                           formatReal(low));
    args.text +=
        ", rope_low_freq_factor = " + formatReal(low) +
        ", rope_high_freq_factor = " + formatReal(high) +
        ", rope_original_max = " +
        std::to_string(cfg.integer(p + "original_max_position_embeddings", 1));
  }
  return args;
}

} // namespace attnc::import
