//===- compiler/import/Importer.cpp - Hugging Face directory to .attn -----===//
#include "compiler/import/Importer.h"
#include "compiler/import/Registry.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace attnc::import {

std::vector<std::string> supportedArchitectures() {
  return getArchitectureRegistry().names();
}

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

static std::string join(llvm::StringRef dir, llvm::StringRef file) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, file);
  return path.str().str();
}

static llvm::Expected<nlohmann::json> readConfig(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail(path + ": cannot read it (" + buffer.getError().message() +
                "); a Hugging Face model directory holds config.json and "
                "model.safetensors");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse((*buffer)->getBuffer().begin(),
                                 (*buffer)->getBuffer().end());
  } catch (const nlohmann::json::exception &e) {
    // "[json.exception.parse_error.101] parse error at line 3, ...".
    llvm::StringRef what = e.what();
    return fail(path + ": not valid JSON: " + what.split("] ").second);
  }
  if (!json.is_object())
    return fail(path + ": expected a JSON object, found " +
                std::string(json.type_name()));
  return json;
}

/// The first entry of config.json's `architectures`, which names the
/// transformers class the checkpoint was saved from.
static llvm::Expected<std::string>
readArchitecture(const nlohmann::json &config, const std::string &path) {
  std::string supported =
      "attnc import supports " + llvm::join(supportedArchitectures(), ", ");
  auto it = config.find("architectures");
  if (it == config.end() || it->is_null())
    return fail(path +
                ": architectures is missing; it names the model "
                "class, and " +
                supported);
  if (!it->is_array() || it->empty() || !(*it)[0].is_string())
    return fail(path + ": architectures is " + it->dump() +
                ", expected a list of class names such as "
                "[\"LlamaForCausalLM\"]");
  std::string name = (*it)[0].get<std::string>();
  if (!getArchitectureRegistry().find(name))
    return fail(path + ": architectures \"" + name + "\" is not supported; " +
                supported);
  return name;
}

/// The checkpoint: one model.safetensors or, as transformers looks for them
/// in that order, a sharded one's model.safetensors.index.json and its
/// shards. A PyTorch pickle is named with what to do instead.
static llvm::Expected<attn::safetensors::Checkpoint>
openWeights(llvm::StringRef dir) {
  std::string path = join(dir, "model.safetensors");
  if (!llvm::sys::fs::exists(path)) {
    std::string index = join(dir, "model.safetensors.index.json");
    if (llvm::sys::fs::exists(index))
      path = index;
    else if (llvm::sys::fs::exists(join(dir, "pytorch_model.bin")) ||
             llvm::sys::fs::exists(join(dir, "pytorch_model.bin.index.json")))
      return fail(path + ": no such file, only pytorch_model.bin; attnc "
                         "reads safetensors (save_pretrained(..., "
                         "safe_serialization=True) writes them)");
    else
      return fail(path + ": no such file; a Hugging Face model directory "
                         "holds config.json and model.safetensors (or "
                         "model.safetensors.index.json and its shards)");
  }
  attn::safetensors::Expected<attn::safetensors::Checkpoint> file =
      attn::safetensors::Checkpoint::open(path);
  if (!file)
    return fail(file.message());
  return std::move(*file);
}

/// The header: where the model came from and every config field read.
static std::string header(ImportContext &ctx) {
  AttnWriter w(ctx);
  std::string version =
      ctx.config().has("transformers_version")
          ? " (transformers " +
                ctx.config().find("transformers_version")->get<std::string>() +
                ")"
          : "";
  w.comment(ctx.architecture() + ", imported by `attnc import`" + version +
            " from");
  w.verbatim(ctx.directory());
  w.comment(std::string("Weight names and dtypes are ") +
            (ctx.weights().sharded() ? "the shards'" : "model.safetensors'") +
            " own; the library reads them at load:");
  w.verbatim("attn-run lib.so --weights " + ctx.weights().path());
  w.comment("config.json: " + llvm::join(ctx.config().fieldsRead(), ", ") +
            ".");
  return w.str();
}

llvm::Expected<ImportResult> importDirectory(llvm::StringRef dir,
                                             const ImportOptions &options) {
  if (dir.size() > 1)
    dir = dir.rtrim('/');
  if (!llvm::sys::fs::is_directory(dir))
    return fail(dir + ": not a directory; attnc import reads a Hugging "
                      "Face model directory (config.json, model.safetensors)");
  std::string configPath = join(dir, "config.json");
  llvm::Expected<nlohmann::json> config = readConfig(configPath);
  if (!config)
    return config.takeError();
  llvm::Expected<std::string> architecture =
      readArchitecture(*config, configPath);
  if (!architecture)
    return architecture.takeError();
  llvm::Expected<attn::safetensors::Checkpoint> weights = openWeights(dir);
  if (!weights)
    return weights.takeError();

  ImportContext ctx(dir.str(), configPath, *architecture, std::move(*config),
                    std::move(*weights), options);
  AttnWriter body(ctx);
  getArchitectureRegistry().find (*architecture)(ctx, body);
  if (ctx.failed())
    return ctx.takeErrors();
  ImportResult result;
  result.source = header(ctx) + body.str();
  result.notes = ctx.takeNotes();
  return result;
}

} // namespace attnc::import
