//===- compiler/import/Rope.h - a config's rotary embeddings ----*- C++ -*-===//
//
// Part of attnc. The rotary embeddings a config.json asks for, as the
// named arguments of an attention: rope_parameters (transformers 5) or
// rope_theta and rope_scaling (older configs), with the scaling types the
// language has (default, linear, llama3); the others are errors naming the
// field and the supported types.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_IMPORT_ROPE_H
#define ATTNC_COMPILER_IMPORT_ROPE_H

#include "compiler/import/ImportContext.h"

#include <string>

namespace attnc::import {

/// The .attn arguments of a rotary embedding ("rope_theta = 10000,
/// rope_scaling = llama3, rope_factor = 8, ...", after `rope = STYLE, `)
/// and the config fields behind them, for the statement's comment.
struct RopeArgs {
  std::string text;
  std::string fields;
};

/// Reads the RoPE base and scaling; `defaultTheta` is the config class's.
RopeArgs readRopeArgs(ImportContext &ctx, double defaultTheta);

} // namespace attnc::import

#endif // ATTNC_COMPILER_IMPORT_ROPE_H
