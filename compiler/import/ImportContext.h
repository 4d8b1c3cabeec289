//===- compiler/import/ImportContext.h - one import in progress -*- C++ -*-===//
//
// What an architecture's writer reads (the config, the checkpoint's tensor
// list, the user's options) and the decisions every family shares: the
// activation a config names, the head, the context bound, the checkpoint's
// key prefix. Errors and notes are collected here; a writer reads on after
// an error where it can, so one import reports every problem it finds.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_IMPORT_IMPORTCONTEXT_H
#define ATTNC_COMPILER_IMPORT_IMPORTCONTEXT_H

#include "attn/safetensors.h"
#include "compiler/import/Config.h"
#include "compiler/import/Importer.h"

#include "llvm/ADT/ArrayRef.h"

namespace attnc::import {

class ImportContext {
public:
  ImportContext(std::string directory, std::string configPath,
                std::string architecture, nlohmann::json config,
                attn::safetensors::Checkpoint weights,
                const ImportOptions &options);

  Config &config() { return cfg; }
  const attn::safetensors::Checkpoint &weights() const { return file; }
  /// The `architectures` entry being imported: "GPT2LMHeadModel".
  llvm::StringRef architecture() const { return arch; }
  llvm::StringRef directory() const { return dir; }
  const ImportOptions &options() const { return opts; }

  void error(const llvm::Twine &message);
  bool failed() const { return !errors.empty(); }
  void note(const llvm::Twine &message);

  /// Refuses a config value: "config.json: FIELD is VALUE; WHY".
  void unsupported(llvm::StringRef field, llvm::StringRef value,
                   const llvm::Twine &why);

  /// `act(x)` for the activation config field `field` names (transformers'
  /// ACT2FN names), `otherwise` when the field is absent.
  std::string activation(llvm::StringRef field, llvm::StringRef otherwise,
                         llvm::StringRef x);
  /// The same for an activation `name` derived from config field `field`
  /// (T5's feed_forward_proj "gated-gelu" names gelu_new).
  std::string activationNamed(llvm::StringRef name, llvm::StringRef field,
                              llvm::StringRef x);

  /// The head --head asks for, one of `allowed`; the first is the default.
  std::string head(llvm::ArrayRef<llvm::StringRef> allowed);

  /// The bound of S and of the KV caches' rows: --max-context, or config
  /// field `field` (`configMax`) capped at kDefaultMaxContext with a note.
  /// A model with a learned position table cannot see past its rows, so
  /// more than `configMax` is then an error.
  int64_t maxContext(llvm::StringRef field, int64_t configMax,
                     bool learnedPositions);

  /// Where maxContext's bound came from, for a comment beside it.
  llvm::StringRef contextNote() const { return contextFrom; }

  /// The model's name in the source: config.json's model_type as an
  /// identifier ("gpt2", "qwen2").
  std::string modelName();

  /// The first of `prefixes` under which the checkpoint holds `probe`: a
  /// task model's file nests the base model ("bert." + "embeddings...");
  /// an error naming them all when none does.
  std::string prefix(llvm::ArrayRef<llvm::StringRef> prefixes,
                     llvm::StringRef probe);

  /// The collected errors, one llvm::Error each; success when none.
  llvm::Error takeErrors();
  std::vector<std::string> takeNotes() { return std::move(notes); }

private:
  std::string dir;
  std::string arch;
  std::vector<std::string> errors;
  std::vector<std::string> notes;
  std::string contextFrom;
  Config cfg;
  attn::safetensors::Checkpoint file;
  const ImportOptions &opts;
};

} // namespace attnc::import

#endif // ATTNC_COMPILER_IMPORT_IMPORTCONTEXT_H
