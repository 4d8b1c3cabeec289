//===- compiler/import/Config.h - config.json fields ------------*- C++ -*-===//
//
// The fields of a Hugging Face config.json, read by name. A missing or
// mistyped field is an error naming it ("config.json: n_head is missing");
// a field with a default takes transformers' default for its config class
// when absent or null. A field may be nested: "rope_parameters.rope_theta".
// Every field read is remembered, with its value, for
// the header comment of the generated source.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_IMPORT_CONFIG_H
#define ATTNC_COMPILER_IMPORT_CONFIG_H

#include "llvm/ADT/FunctionExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnc::import {

/// The shortest decimal that reads back as `value` ("1e-05", "10000"), as
/// the .attn lexer reads it.
std::string formatReal(double value);

class Config {
public:
  using ErrorFn = llvm::unique_function<void(const llvm::Twine &)>;

  /// `fileName` (the path of config.json) starts every error.
  Config(nlohmann::json json, std::string fileName, ErrorFn error)
      : json(std::move(json)), fileName(std::move(fileName)),
        error(std::move(error)) {}

  /// A required positive integer.
  int64_t count(llvm::StringRef field);
  /// A non-negative integer, `otherwise` when absent or null.
  int64_t integer(llvm::StringRef field, int64_t otherwise);
  /// A positive finite number (an integer is one), `otherwise` when absent
  /// or null.
  double positive(llvm::StringRef field, double otherwise);
  std::string string(llvm::StringRef field, llvm::StringRef otherwise);
  bool boolean(llvm::StringRef field, bool otherwise);
  /// Present and not null.
  bool has(llvm::StringRef field) const;
  /// The raw value, or null when absent.
  const nlohmann::json *find(llvm::StringRef field) const;

  /// Reports `message` as an error about `field`: "DIR/config.json: FIELD
  /// ...".
  void fail(llvm::StringRef field, const llvm::Twine &message);
  /// Fails `field` unless its `value` divides field `ofField`'s `of` ("5
  /// does not divide n_embd 32"); nothing when either is 0 (already
  /// reported missing).
  void divides(llvm::StringRef field, int64_t value, llvm::StringRef ofField,
               int64_t of);

  /// "n_embd 32, n_head 4, layer_norm_epsilon 1e-05 (default), ...": the
  /// fields read so far, in order.
  std::vector<std::string> fieldsRead() const;
  /// Records a field read outside these accessors.
  void record(llvm::StringRef field, llvm::StringRef value, bool isDefault);

private:
  nlohmann::json json;
  std::string fileName;
  ErrorFn error;
  std::vector<std::pair<std::string, std::string>> read;
};

} // namespace attnc::import

#endif // ATTNC_COMPILER_IMPORT_CONFIG_H
