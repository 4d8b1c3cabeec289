//===- compiler/import/AttnWriter.h - generated .attn source ----*- C++ -*-===//
//
// Builds the text of an imported model: comments, indented statements with
// a trailing comment naming the config fields behind them, and weight
// declarations checked against the checkpoint (present, a dtype the
// language reads, the shape the config implies) before they are written
// with the checkpoint's own dtype.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_IMPORT_ATTNWRITER_H
#define ATTNC_COMPILER_IMPORT_ATTNWRITER_H

#include "compiler/import/ImportContext.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"

#include <string>
#include <vector>

namespace attnc::import {

/// One extent of a weight, and the config fields it comes from
/// ("3 * n_embd"), for the message when the checkpoint disagrees.
struct Extent {
  int64_t value;
  std::string from;
};

struct WeightSpec {
  /// The checkpoint key; inside a repeat `{i}` stands for the layer.
  std::string name;
  /// As stored.
  std::vector<Extent> shape;
  /// Stored [in, out] (GPT-2's Conv1D): `layout(in, out)`.
  bool inOut = false;
};

class AttnWriter {
public:
  explicit AttnWriter(ImportContext &ctx) : ctx(ctx) {}

  /// `# text`, wrapped at 80 columns.
  void comment(const llvm::Twine &text);
  /// `#   text` on one line, unwrapped (a path, a command).
  void verbatim(const llvm::Twine &text);
  void blank() { out += "\n"; }
  /// A statement at the current indent; each line of a multi-line `code`
  /// is indented the same, and `note` ends its first line as a comment.
  void line(const llvm::Twine &code, const llvm::Twine &note = "");
  /// `header {` and one indent more, until close().
  void open(const llvm::Twine &header, const llvm::Twine &note = "");
  void close();

  /// Declares `specs`, aligned, after checking each against the checkpoint
  /// (every layer's tensor when `layers` > 0, and that the checkpoint has no
  /// layer `layers`: a config with fewer layers than the checkpoint would
  /// silently drop some). An I8 matrix (from attnc quantize) is declared
  /// i8 with its scales `NAME_scale : f32[out]` after it, a U8 one (4-bit,
  /// `attnc quantize --bits 4`) i4 with its scales `f32[out, in / G]`.
  void weights(llvm::ArrayRef<WeightSpec> specs, int64_t layers = 0);

  /// The key and value caches `P.key` and `P.value`, [B, `rows`,
  /// `features`] (one declaration per layer inside a repeat), in the
  /// element type --kv-cache chose; i8 ones with their scales `P.key_scale`
  /// and `P.value_scale`, f32 [B, `rows`, `kvHeads`]. A cross-attention's
  /// caches (`kvHeads` 0) cannot be i8: an error.
  void kvCache(llvm::StringRef prefix, llvm::StringRef rows,
               const llvm::Twine &features, int64_t kvHeads);

  /// A decoder's entries comment, its dims (S and the caches' L bounded by
  /// `context`, from `contextNote`) and its input `ids`.
  void decoderInputs(llvm::StringRef head, int64_t context,
                     llvm::StringRef contextNote);

  /// An encoder-decoder's entries comment, its dims (T the encoder's
  /// tokens, S the decoder's, L its caches' rows, each bounded by
  /// `context`) and its inputs `ids`, `lengths` and `decoder_ids`.
  void encoderDecoderInputs(llvm::StringRef head, int64_t context,
                            llvm::StringRef contextNote);

  /// A decoder's output after its final norm `h`: `hidden` (--head=hidden),
  /// else `logits` through the token table `table` when `tied`, else
  /// through `lm_head.weight` [vocab, D].
  void decoderHead(llvm::StringRef head, bool tied, llvm::StringRef table,
                   Extent vocab, Extent D);

  const std::string &str() const { return out; }

private:
  /// The dtype spelling of checkpoint tensor `name` after checking it
  /// against `spec`, or "" after an error.
  std::string checkTensor(const WeightSpec &spec, llvm::StringRef name);
  /// Checks and declares the scales of I8 (or, `fourBit`, U8) matrix `spec`.
  void quantizationScales(const WeightSpec &spec, int64_t layers, bool fourBit);
  /// Errors if `attnc quantize` recorded `matrix` in the other layout.
  void checkQuantizedLayout(const std::string &matrix, bool inOut);

  ImportContext &ctx;
  std::string out;
  unsigned indent = 0;
};

/// `name` with `{i}` replaced by `layer`.
std::string layerName(llvm::StringRef name, int64_t layer);

} // namespace attnc::import

#endif // ATTNC_COMPILER_IMPORT_ATTNWRITER_H
