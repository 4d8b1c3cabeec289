//===- schedules/TargetDesc.cpp - what kernels are built for --------------===//
#include "schedules/TargetDesc.h"

#include <algorithm>

namespace attnc::schedules {

const char *deviceName(Device device) {
  switch (device) {
  case Device::Host:
    return "host";
  case Device::Cuda:
    return "cuda";
  case Device::OpenCL:
    return "opencl";
  }
  return "?";
}

const char *precisionName(Precision precision) {
  switch (precision) {
  case Precision::F32:
    return "f32";
  case Precision::BF16:
    return "bf16";
  case Precision::Int8:
    return "int8";
  }
  return "?";
}

const std::vector<Precision> &allPrecisions() {
  static const std::vector<Precision> all = {Precision::F32, Precision::BF16,
                                             Precision::Int8};
  return all;
}

std::optional<Precision> parsePrecision(const std::string &name) {
  for (Precision p : allPrecisions())
    if (name == precisionName(p))
      return p;
  return std::nullopt;
}

Device TargetDesc::device() const {
  if (halide_.has_feature(Halide::Target::CUDA))
    return Device::Cuda;
  if (halide_.has_feature(Halide::Target::OpenCL))
    return Device::OpenCL;
  return Device::Host;
}

bool TargetDesc::storesHalfAsBits() const {
  // CUDA: Halide 21's PTX code generator fails an LLVM assertion ("Invalid
  // cast") on a bf16 -> f32 cast (the test decoder's bf16 weight).
  return device() == Device::Cuda ||
         (device() == Device::OpenCL &&
          !halide_.has_feature(Halide::Target::CLHalf));
}

bool TargetDesc::warpShuffles() const { return device() == Device::Cuda; }

bool TargetDesc::hasAny(
    std::initializer_list<Halide::Target::Feature> features) const {
  for (Halide::Target::Feature f : features)
    if (halide_.has_feature(f))
      return true;
  return false;
}

int TargetDesc::vectorRegisters() const {
  using T = Halide::Target;
  return hasAny({T::AVX512, T::AVX512_KNL, T::AVX512_Skylake,
                 T::AVX512_Cannonlake, T::AVX512_SapphireRapids,
                 T::AVX512_Zen4, T::AVX512_Zen5})
             ? 32
             : 16;
}

bool TargetDesc::hasBf16Dot() const {
  using T = Halide::Target;
  return hasAny({T::AVX512_SapphireRapids, T::AVX512_Zen4, T::AVX512_Zen5});
}

bool TargetDesc::hasAmx() const {
  return halide_.has_feature(Halide::Target::AVX512_SapphireRapids);
}

bool TargetDesc::usesAmxTiles(int64_t inFeatures) const {
  return hasAmx() && inFeatures % AmxTile::depth == 0;
}

bool TargetDesc::hasInt8Dot() const {
  // Halide has no VNNI feature of its own: the targets that imply it.
  using T = Halide::Target;
  return hasAny({T::AVX512_SapphireRapids, T::AVX512_Zen4, T::AVX512_Zen5});
}

bool TargetDesc::int8GemvPanelsInTurn() const {
  // On Zen 4 a GEMV reading its panels one after the other, a single
  // stream, beat four panels at once: GPT-2 small's decode step 0.84
  // (int8-a8) and 0.68 (q4-a8) of its time at context 128, 0.90 and 0.86
  // at 1000, with two panels at once as slow as four (docs/performance.md,
  // session 40). Tasks keep four panels: one a task took 1.2-1.3 times as
  // long on 2 threads. Sapphire Rapids was measured at four at once
  // (session 39), never in turn; nor was Zen 5 (Halide's avx512_zen5
  // without avx512_zen4 reads them at once).
  return halide_.has_feature(Halide::Target::AVX512_Zen4);
}

std::string TargetDesc::llvmOptions() const {
  // Halide's avx512_zen4 compiles with LLVM's -mcpu=znver4, whose machine
  // LICM kept a GEMM epilogue's constants (exact GELU's erf: about 18 of
  // them) in registers across the register tile's reduction, so the tile's
  // 24 accumulators spilled to the stack: BERT's 768 -> 3072 linear with
  // GELU ran at 37 GFLOP/s against 93-98 for avx512_skylake's or
  // _cannonlake's code on the same Zen 4, and 91 without the GELU. Without
  // machine LICM: 96 GFLOP/s; BERT and GPT-2 blocks at 1x128 and 8x128
  // (1 thread) 0.61-0.67 of their time, GPT-2 small's decode steps
  // unchanged, outputs bit-identical (docs/performance.md, "Zen 4's GEMM
  // epilogues"). Other targets were not measured without it.
  if (halide_.has_feature(Halide::Target::AVX512_Zen4))
    return "-disable-machine-licm";
  return "";
}

int TargetDesc::gemmPanelWidth() const {
  if (isGpu())
    return 0;
  int vectors = vectorRegisters() == 32 ? 4 : 2;
  return vectors * halide_.natural_vector_size<float>();
}

int64_t TargetDesc::l2CacheBytes() const {
  if (isGpu())
    return 0;
  if (hasAmx())
    return 2 << 20;
  return vectorRegisters() == 32 ? 1 << 20 : 256 << 10;
}

int TargetDesc::gemmRowTile() const {
  int panel = gemmPanelWidth();
  if (panel == 0)
    return 1;
  int vectors = panel / halide_.natural_vector_size<float>();
  return (vectorRegisters() - vectors - 1) / vectors;
}

int TargetDesc::attentionQueryTile(bool decoding) const {
  // 32 rows on either: a CPU's vectors run over a tile's rows; a GPU runs
  // a block per (batch, head, query tile), a thread per row.
  if (decoding)
    return 1;
  return 32;
}

int TargetDesc::attentionKeyTile(bool quantizedCache, bool amxProducts) const {
  // GPU: 32, so a prefill block's shared memory (the tile's keys and
  // values, its 32 rows' states) fits 48 KiB at head dim 64: 40 KiB, where
  // 64 keys took 56 KiB and CUDA refused the launch (an H200, session 29).
  if (isGpu())
    return 32;
  // An i8 cache's tile of 64 keys is 48 KiB of GPT-2's rows: its two
  // streams (keys, then values) restart every tile, and the decode
  // attention read it at 11 GB/s. 256 keys (192 KiB, an f32 tile's bytes):
  // 13.1 GB/s, 512: 15.1, 1024: 13.2 (GPT-2 small at context 4096, 1
  // thread, the shared 2-core Zen 4, in turns; docs/performance.md, "KV
  // caches in 8 bits"). 256 rather than 512: a decode computes its last
  // tile whole, so a longer tile wastes more keys at short contexts.
  // AMX products: 128 keys (a multiple of AmxTile::depth). 12 heads of 64
  // at S = 512, 1 thread, this 2-vCPU Sapphire Rapids, in turns: 4.42 ms
  // against 5.22 with 64 keys, causal 3.56 against 3.88; at S = 128
  // 0.38-0.40 against 0.43. 256 keys: 3.90 at 512 but 0.71 at 128 (a
  // tile's keys past the sequence are computed too).
  if (amxProducts)
    return 128;
  return quantizedCache ? 256 : 64;
}

int TargetDesc::attentionKeyChunks(bool decoding) const {
  // CPU: 8 runs are enough for 2 to 8 cores and keep the merge small (a
  // task per head read its 256-byte pieces of rows kilobytes apart; runs of
  // whole rows stream). GPU: a block per (head, run, query row), 16 runs
  // giving GPT-2 192 blocks at B = 1 (the H200 has 132 SMs).
  if (!decoding)
    return 1;
  return isGpu() ? 16 : 8;
}

bool TargetDesc::attentionStateSlots(bool decoding) const {
  // BERT's attention at 1x512 and GPT-2's at 1x4096 (causal), 1 thread,
  // Sapphire Rapids: the Tuple form's state update took 20% and 17% of
  // the time (an exp per feature); slotted, 1% and 3%.
  return !decoding && !isGpu();
}

std::string BuildTarget::names() const {
  std::string s;
  for (const TargetDesc &variant : variants_)
    s += (s.empty() ? "" : ",") + variant.halide().to_string();
  return s;
}

int BuildTarget::weightPanelWidth() const {
  return schedule_ == ScheduleKind::Hand ? baseline().gemmPanelWidth() : 0;
}

int BuildTarget::int8PanelWidth() const {
  return schedule_ == ScheduleKind::Hand && precision_ == Precision::Int8
             ? baseline().int8PanelWidth()
             : 0;
}

bool BuildTarget::usesAmxKernel() const {
  return precision_ == Precision::BF16 && weightPanelWidth() != 0 &&
         std::any_of(variants_.begin(), variants_.end(),
                     [](const TargetDesc &v) { return v.hasAmx(); });
}

} // namespace attnc::schedules
