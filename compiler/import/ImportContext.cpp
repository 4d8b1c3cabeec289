//===- compiler/import/ImportContext.cpp - one import in progress ---------===//
#include "compiler/import/ImportContext.h"

#include "llvm/ADT/StringExtras.h"

namespace attnc::import {

/// More errors than this are counted, not listed: a wrong key prefix would
/// otherwise list every tensor.
static constexpr size_t kMaxErrors = 20;

ImportContext::ImportContext(std::string directory, std::string configPath,
                             std::string architecture, nlohmann::json config,
                             attn::safetensors::Checkpoint weights,
                             const ImportOptions &options)
    : dir(std::move(directory)), arch(std::move(architecture)),
      cfg(std::move(config), std::move(configPath),
          [this](const llvm::Twine &message) { error(message); }),
      file(std::move(weights)), opts(options) {}

void ImportContext::error(const llvm::Twine &message) {
  errors.push_back(message.str());
}

void ImportContext::note(const llvm::Twine &message) {
  notes.push_back(message.str());
}

void ImportContext::unsupported(llvm::StringRef field, llvm::StringRef value,
                                const llvm::Twine &why) {
  cfg.fail(field, "is " + value + "; " + why);
}

/// transformers' ACT2FN names of the functions the language has.
static const std::pair<llvm::StringRef, llvm::StringRef> kActivations[] = {
    {"gelu", "gelu(X)"},
    {"gelu_new", "gelu(X, approximate = tanh)"},
    {"gelu_pytorch_tanh", "gelu(X, approximate = tanh)"},
    {"relu", "relu(X)"},
    {"silu", "silu(X)"},
    {"swish", "silu(X)"},
    {"tanh", "tanh(X)"},
    {"sigmoid", "sigmoid(X)"},
};

std::string ImportContext::activation(llvm::StringRef field,
                                      llvm::StringRef otherwise,
                                      llvm::StringRef x) {
  return activationNamed(cfg.string(field, otherwise), field, x);
}

std::string ImportContext::activationNamed(llvm::StringRef name,
                                           llvm::StringRef field,
                                           llvm::StringRef x) {
  std::vector<llvm::StringRef> names;
  for (auto &[known, spelling] : kActivations) {
    if (known == name) {
      std::string expr = spelling.str();
      expr.replace(expr.find('X'), 1, x.str());
      return expr;
    }
    names.push_back(known);
  }
  unsupported(field, ("\"" + name + "\"").str(),
              "attnc import supports " + llvm::join(names, ", "));
  return x.str();
}

std::string ImportContext::head(llvm::ArrayRef<llvm::StringRef> allowed) {
  if (opts.head.empty())
    return allowed.front().str();
  if (llvm::is_contained(allowed, opts.head))
    return opts.head;
  error("--head=" + opts.head + ": " + arch + " gives " +
        llvm::join(allowed, " or ") +
        " (--head=" + llvm::join(allowed, ", --head=") + ")");
  return allowed.front().str();
}

int64_t ImportContext::maxContext(llvm::StringRef field, int64_t configMax,
                                  bool learnedPositions) {
  std::string configured = (field + " " + llvm::Twine(configMax)).str();
  if (opts.maxContext > 0) {
    contextFrom = "--max-context (" + configured + ")";
    if (learnedPositions && opts.maxContext > configMax)
      error("--max-context " + llvm::Twine(opts.maxContext) +
            " exceeds config.json's " + field + " " + llvm::Twine(configMax) +
            ": " + arch + " learns one position embedding per position");
    return opts.maxContext;
  }
  if (configMax <= kDefaultMaxContext) {
    contextFrom = configured;
    return configMax;
  }
  contextFrom = configured + ", capped: --max-context";
  note("config.json's " + field + " is " + llvm::Twine(configMax) +
       "; the context (S, and the KV caches' rows) is capped at " +
       llvm::Twine(kDefaultMaxContext) +
       ": give --max-context N for another bound");
  return kDefaultMaxContext;
}

std::string ImportContext::modelName() {
  std::string name = cfg.string("model_type", "imported");
  for (char &c : name)
    if (!llvm::isAlnum(c))
      c = '_';
  if (name.empty() || llvm::isDigit(name.front()) || name == "model")
    name = "imported_" + name;
  return name;
}

std::string ImportContext::prefix(llvm::ArrayRef<llvm::StringRef> prefixes,
                                  llvm::StringRef probe) {
  std::vector<std::string> tried;
  for (llvm::StringRef p : prefixes) {
    if (file.find((p + probe).str()))
      return p.str();
    tried.push_back((p + probe).str());
  }
  error(file.path() + ": no tensor " + llvm::join(tried, " or ") + ", which " +
        arch + " needs");
  return prefixes.front().str();
}

llvm::Error ImportContext::takeErrors() {
  llvm::Error all = llvm::Error::success();
  for (size_t i = 0; i < errors.size() && i < kMaxErrors; ++i)
    all = llvm::joinErrors(std::move(all), llvm::createStringError(errors[i]));
  if (errors.size() > kMaxErrors)
    all = llvm::joinErrors(
        std::move(all),
        llvm::createStringError("and " +
                                std::to_string(errors.size() - kMaxErrors) +
                                " more errors"));
  errors.clear();
  return all;
}

} // namespace attnc::import
