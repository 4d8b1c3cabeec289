//===- compiler/import/Importer.h - Hugging Face dir to .attn ---*- C++ -*-===//
//
// `attnc import DIR`: reads a Hugging Face model directory (config.json and
// model.safetensors) and writes the model as readable .attn source that
// declares the checkpoint's own weight names and dtypes. One writer per
// architecture family (Gpt2.cpp, Bert.cpp, Llama.cpp) registers the
// `architectures` names it reads (Registry.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_IMPORT_IMPORTER_H
#define ATTNC_COMPILER_IMPORT_IMPORTER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnc::import {

/// The longest context a decoder's KV caches (and S) get unless
/// --max-context asks for more: the config's maximum may be 128k tokens,
/// whose caches alone would take gigabytes.
constexpr int64_t kDefaultMaxContext = 4096;

struct ImportOptions {
  /// --max-context: the bound of S and of the KV caches' rows; 0 takes the
  /// config's maximum, capped at kDefaultMaxContext.
  int64_t maxContext = 0;
  /// --head: "logits" or "hidden"; empty takes the architecture's default.
  std::string head;
  /// --kv-cache: the element type of the KV caches' states, "f32" (the
  /// default), "f16" or "bf16" (half the bytes a decode step reads).
  std::string kvCache = "f32";
};

struct ImportResult {
  /// The .attn source.
  std::string source;
  /// What the user should know but is not an error (a capped context).
  std::vector<std::string> notes;
};

/// Reads the model directory `dir`. Every error names its file and field
/// ("config.json: num_attention_heads is missing"); an architecture or a
/// config value the importer cannot honour is an error, never a different
/// model.
llvm::Expected<ImportResult> importDirectory(llvm::StringRef dir,
                                             const ImportOptions &options);

/// The `architectures` names importDirectory reads, sorted.
std::vector<std::string> supportedArchitectures();

} // namespace attnc::import

#endif // ATTNC_COMPILER_IMPORT_IMPORTER_H
