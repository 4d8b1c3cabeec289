//===- compiler/import/AttnWriter.cpp - generated .attn source ------------===//
#include "compiler/import/AttnWriter.h"

#include "llvm/ADT/StringExtras.h"

namespace attnc::import {

using attn::safetensors::DType;

void AttnWriter::decoderInputs(llvm::StringRef head, int64_t context,
                               llvm::StringRef contextNote) {
  std::string bound = std::to_string(context);
  comment("Entries: run (ids -> " + head +
          "); prefill and decode keep each layer's keys and values in the "
          "states cache.{i}.key and cache.{i}.value (attn-run --generate).");
  line("dim B, S <= " + bound + ", L <= " + bound, contextNote);
  line("input ids : i32[B, S]");
  blank();
}

void AttnWriter::encoderDecoderInputs(llvm::StringRef head, int64_t context,
                                      llvm::StringRef contextNote) {
  std::string bound = std::to_string(context);
  comment("Entries: run (ids, lengths and decoder_ids -> " + head +
          "); prefill also writes the decoder's keys and values into "
          "cache.{i} and the encoder's, projected for each layer's "
          "cross-attention, into cross.{i}; decode takes decoder_ids and "
          "lengths only (the encoder's states are in cross.{i}). Encoder "
          "sequence b's tokens are 0 .. lengths[b] - 1 (the "
          "attention_mask's ones).");
  line("dim B, T <= " + bound + ", S <= " + bound + ", L <= " + bound,
       contextNote + "; T: the encoder's tokens");
  line("input ids : i32[B, T]");
  line("input lengths : i32[B]");
  line("input decoder_ids : i32[B, S]");
  blank();
}

void AttnWriter::decoderHead(llvm::StringRef head, bool tied,
                             llvm::StringRef table, Extent vocab, Extent D) {
  if (head == "hidden") {
    line("output hidden = h");
  } else if (tied) {
    line("output logits = linear(h, " + table + ")",
         "tie_word_embeddings: the head is the token table");
  } else {
    weights({{"lm_head.weight", {vocab, D}}});
    line("output logits = linear(h, lm_head)", "tie_word_embeddings false");
  }
}

std::string layerName(llvm::StringRef name, int64_t layer) {
  std::string s = name.str();
  for (size_t at = s.find("{i}"); at != std::string::npos; at = s.find("{i}"))
    s.replace(at, 3, std::to_string(layer));
  return s;
}

void AttnWriter::comment(const llvm::Twine &text) {
  std::string pad(2 * indent, ' ');
  std::string current, all = text.str();
  for (llvm::StringRef word : llvm::split(all, ' ')) {
    if (!current.empty() &&
        pad.size() + 2 + current.size() + 1 + word.size() > 80) {
      out += pad + "# " + current + "\n";
      current.clear();
    }
    current += (current.empty() ? "" : " ") + word.str();
  }
  out += pad + "#" + (current.empty() ? "" : " ") + current + "\n";
}

void AttnWriter::verbatim(const llvm::Twine &text) {
  out += std::string(2 * indent, ' ') + "#   " + text.str() + "\n";
}

void AttnWriter::line(const llvm::Twine &code, const llvm::Twine &note) {
  std::string pad(2 * indent, ' ');
  std::string noteText = note.str(), all = code.str();
  bool first = true;
  for (llvm::StringRef l : llvm::split(all, '\n')) {
    out += pad + l.str();
    if (first && !noteText.empty())
      out += "  # " + noteText;
    out += "\n";
    first = false;
  }
}

void AttnWriter::open(const llvm::Twine &header, const llvm::Twine &note) {
  line(header + " {", note);
  ++indent;
}

void AttnWriter::close() {
  --indent;
  line("}");
}

/// The language's spelling of a weight dtype, or "" for one it cannot read.
static llvm::StringRef typeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::I8:
    return "i8";
  case DType::U8: // 4-bit values, two per byte
    return "i4";
  default:
    return "";
  }
}

static std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  std::vector<std::string> dims;
  for (int64_t d : shape)
    dims.push_back(std::to_string(d));
  return "[" + llvm::join(dims, ", ") + "]";
}

std::string AttnWriter::checkTensor(const WeightSpec &spec,
                                    llvm::StringRef name) {
  const attn::safetensors::Tensor *t = ctx.weights().find(name);
  if (!t) {
    ctx.error(ctx.weights().path() + ": no tensor " + name + ", which " +
              ctx.architecture() + " needs");
    return "";
  }
  llvm::StringRef type = typeName(t->dtype);
  if (type.empty()) {
    ctx.error(ctx.weights().path() + ": " + name + " is " +
              attn::safetensors::dtypeName(t->dtype) +
              "; attnc reads F32, BF16 and F16 weights, and I8 and U8 "
              "(4-bit) matrices that attnc quantize wrote");
    return "";
  }
  std::vector<int64_t> want;
  std::vector<std::string> why;
  for (const Extent &e : spec.shape) {
    want.push_back(e.value);
    why.push_back(e.from + " " + std::to_string(e.value));
  }
  // A 4-bit matrix holds two inputs per byte.
  bool packed = t->dtype == DType::U8 && want.size() == 2;
  if (packed)
    want[spec.inOut ? 0 : 1] /= 2;
  if (t->shape != want) {
    ctx.error(ctx.weights().path() + ": " + name + " is " +
              shapeText(t->shape) + ", but config.json makes it [" +
              llvm::join(why, ", ") + "]" +
              (packed ? ", stored " + shapeText(want) +
                            " as U8 (4-bit "
                            "values, two inputs per byte)"
                      : ""));
    return "";
  }
  return type.str();
}

void AttnWriter::weights(llvm::ArrayRef<WeightSpec> specs, int64_t layers) {
  size_t width = 0;
  for (const WeightSpec &spec : specs)
    width = std::max(width, spec.name.size());
  if (layers > 0 && !specs.empty()) {
    std::string extra = layerName(specs.front().name, layers);
    if (ctx.weights().find(extra))
      ctx.error(ctx.weights().path() + " has " + extra + ", a layer past the " +
                llvm::Twine(layers) +
                " that config.json gives: the config and the checkpoint "
                "disagree");
  }
  for (const WeightSpec &spec : specs) {
    std::string type;
    for (int64_t i = 0; i < std::max<int64_t>(layers, 1); ++i) {
      std::string name = layers > 0 ? layerName(spec.name, i) : spec.name;
      std::string t = checkTensor(spec, name);
      if (i == 0)
        type = t;
      else if (!t.empty() && !type.empty() && t != type)
        ctx.error(ctx.weights().path() + ": " + name + " is " + t + " but " +
                  layerName(spec.name, 0) + " is " + type +
                  "; a layer's weights must share their dtype across layers");
    }
    std::vector<std::string> dims;
    for (const Extent &e : spec.shape)
      dims.push_back(std::to_string(e.value));
    line("weight " + spec.name + std::string(width - spec.name.size(), ' ') +
         " : " + (type.empty() ? "f32" : type) + "[" + llvm::join(dims, ", ") +
         "]" + (spec.inOut ? " layout(in, out)" : ""));
    if (type == "i8" || type == "i4")
      quantizationScales(spec, layers, type == "i4");
  }
}

/// A matrix `attnc quantize` read in the other layout than the model's
/// (recorded in the file's metadata: a square matrix's shape cannot say) has
/// its scales on the wrong axis; files without the record are not checked.
void AttnWriter::checkQuantizedLayout(const std::string &matrix, bool inOut) {
  const attn::safetensors::Tensor *t = ctx.weights().find(matrix);
  if (!t)
    return;
  if (std::optional<std::string> conflict =
          attn::safetensors::conflictingQuantizedLayout(ctx.weights(), *t,
                                                        inOut))
    ctx.error(ctx.weights().pathOf(*t) + ": " + matrix + " " + *conflict);
}

/// A matrix `attnc quantize` wrote as I8 has its per-output-channel scales
/// beside it, `NAME_scale` F32 [out]; one it wrote as U8 (4-bit) its
/// per-group scales, F32 [out, in / G] (`[in / G, out]` for an [in, out]
/// matrix), G read from the first layer's and the same for every layer:
/// declared after it, as the language finds them. Whether the model may read
/// it quantized is the frontend's to say (a linear or self_attention
/// projection, or an embedding table, is; a relative_bias table is not).
void AttnWriter::quantizationScales(const WeightSpec &spec, int64_t layers,
                                    bool fourBit) {
  llvm::StringRef dtype = fourBit ? "U8" : "I8";
  if (spec.shape.size() != 2) {
    ctx.error(ctx.weights().path() + ": " + spec.name + " is " + dtype +
              " but not a matrix; only linear matrices may be quantized");
    return;
  }
  int64_t out = spec.shape[spec.inOut ? 1 : 0].value;
  int64_t in = spec.shape[spec.inOut ? 0 : 1].value;
  std::vector<int64_t> want{out};
  if (fourBit) {
    // The group count of the first layer's scales, checked below.
    const attn::safetensors::Tensor *first = ctx.weights().find(
        (layers > 0 ? layerName(spec.name, 0) : spec.name) + "_scale");
    int64_t groups = first && first->shape.size() == 2
                         ? first->shape[spec.inOut ? 0 : 1]
                         : in / 32;
    if (groups <= 0 || in % groups != 0)
      groups = in % 32 == 0 ? in / 32 : 1;
    want = spec.inOut ? std::vector<int64_t>{groups, out}
                      : std::vector<int64_t>{out, groups};
  }
  for (int64_t i = 0; i < std::max<int64_t>(layers, 1); ++i) {
    std::string matrix = layers > 0 ? layerName(spec.name, i) : spec.name;
    checkQuantizedLayout(matrix, spec.inOut);
    std::string name = matrix + "_scale";
    const attn::safetensors::Tensor *t = ctx.weights().find(name);
    if (!t || t->dtype != DType::F32 || t->shape != want)
      ctx.error(
          ctx.weights().path() + ": the " + dtype + " matrix " +
          name.substr(0, name.size() - 6) + " needs its scales " + name +
          " as F32 " + shapeText(want) +
          (fourBit ? " (one per group of inputs of an output; every layer "
                     "with the group of the first)"
                   : "") +
          " (attnc quantize writes both)" +
          (t ? llvm::Twine(", but it is ") +
                   attn::safetensors::dtypeName(t->dtype) + shapeText(t->shape)
             : llvm::Twine("")));
  }
  line("weight " + spec.name + "_scale : f32" + shapeText(want));
}

void AttnWriter::kvCache(llvm::StringRef prefix, llvm::StringRef rows,
                         const llvm::Twine &features, int64_t kvHeads) {
  const std::string &dtype = ctx.options().kvCache;
  if (dtype == "i8" && kvHeads == 0) {
    ctx.error("--kv-cache i8: the cross-attention caches '" + prefix.str() +
              "' of an encoder-decoder are f32, f16 or bf16 (i8 caches are a "
              "self-attention's); import it with --kv-cache f16 or bf16");
    return;
  }
  std::string type = dtype + "[B, " + rows.str() + ", " + features.str() + "]";
  line("state " + prefix + ".key   : " + type);
  line("state " + prefix + ".value : " + type);
  if (dtype != "i8")
    return;
  std::string scales =
      "f32[B, " + rows.str() + ", " + std::to_string(kvHeads) + "]";
  line("state " + prefix + ".key_scale   : " + scales);
  line("state " + prefix + ".value_scale : " + scales);
}

} // namespace attnc::import
