//===- schedules/TargetDesc.h - what kernels are built for ------*- C++ -*-===//
//
// The target description. attnc parses --target and --schedule once into a
// BuildTarget: one TargetDesc per Halide target a kernel is compiled for (a
// variant), and the schedule kind. Every decision that follows from the
// target and that more than one schedule reads is a TargetDesc property,
// answered here once: the pass pipeline reads the weight layout the GEMM
// schedule wants (gemmPanelWidth), the algorithm the attention tiles it is
// built with (and records them in its stages, so a schedule never derives
// them again), and the schedules place the Funcs for it. This header and its
// .cpp include nothing of schedules/cpu or schedules/gpu, which include it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SCHEDULES_TARGETDESC_H
#define ATTNC_SCHEDULES_TARGETDESC_H

#include "Halide.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace attnc::schedules {

/// Where a kernel's loops run.
enum class Device { Host, Cuda, OpenCL };

/// "host", "cuda" or "opencl", as attnc and the docs name them.
const char *deviceName(Device device);

/// --schedule: the hand schedules (schedules/cpu/, schedules/gpu/), Halide's
/// autoscheduler (schedules/AutoSchedule.h) or the naive baseline. Layout is
/// not a user's choice: it schedules the kernels that rearrange weights at
/// load (the "init" entry), whatever --schedule says.
enum class ScheduleKind { Hand, Auto, Naive, Layout };

/// --precision: what the linears' GEMMs multiply. F32 (the default): f32
/// inputs and weights. BF16: inputs rounded to bf16 (to nearest, ties to
/// even) and bf16 weights (f32 ones converted once at load), products
/// summed in f32 by AVX512_BF16's dot products (TargetDesc::hasBf16Dot);
/// on AMX targets a prefill attention's two products too (bf16 operands,
/// f32 sums; lowerings/Attention.cpp, usesAmxTiles).
/// Int8: linears with i8 or 4-bit weights quantize their input rows to
/// int8 as they run (blocks of 32 inputs, a scale each) and sum integer
/// products (lowerings/Int8Linear.cpp); other linears as F32.
enum class Precision { F32, BF16, Int8 };

/// Every precision, in the enum's order (for listing them).
const std::vector<Precision> &allPrecisions();
/// "f32", "bf16" or "int8", as attnc and the docs name them.
const char *precisionName(Precision precision);
/// The precision `name` names, or none.
std::optional<Precision> parsePrecision(const std::string &name);

/// One variant: the Halide target a kernel is compiled for, and what
/// follows from it.
class TargetDesc {
public:
  explicit TargetDesc(Halide::Target halide) : halide_(std::move(halide)) {}

  /// The target as the library records it (without the features every
  /// kernel is compiled with, NoRuntime and UserContext).
  const Halide::Target &halide() const { return halide_; }
  Device device() const;
  bool isGpu() const { return device() != Device::Host; }

  /// Vector registers of a CPU target: 32 with any AVX-512 (Halide's
  /// avx512_skylake, _cannonlake, _sapphirerapids and _zen4 targets do not
  /// list the AVX512 feature itself), 16 otherwise.
  int vectorRegisters() const;

  /// Output features per packed weight panel, the CPU GEMM schedule's
  /// register tile (attn.pack_panels): 4 vectors wide with AVX-512's 32
  /// registers, 2 with AVX2's 16. 0 where GEMMs read plain [in, out]
  /// weights (on GPUs, where a warp's threads read consecutive outputs of
  /// one row).
  int gemmPanelWidth() const;

  /// A CPU core's L2 cache as the schedules may count on it: the smallest
  /// per-core L2 of the CPUs that run this target's code. 2 MiB on
  /// Sapphire Rapids (and its successors, Halide's avx512_sapphirerapids);
  /// 1 MiB on other AVX-512 CPUs (Skylake-SP, Ice Lake-SP, Zen 4 and 5;
  /// client Ice Lake's 512 KiB excepted); 256 KiB otherwise (Haswell to
  /// Skylake clients; Zen 1 to 3 have 512 KiB). 0 on GPUs.
  int64_t l2CacheBytes() const;

  /// Rows of the CPU GEMM register tile: as many rows of one panel's
  /// accumulators as the vector registers hold beside the panel's weight
  /// vectors and a broadcast input (6 on either: 6 x 4 + 4 + 1 of AVX-512's
  /// 32, 6 x 2 + 2 + 1 of AVX2's 16). A prefill's rows and a batched
  /// decode's sequences are tiled by it; 1 where GEMMs have no panels.
  int gemmRowTile() const;

  /// Query rows per flash-attention tile: the rows that share each key
  /// tile's loads (on a GPU, one thread per row of a block). A decode (a few
  /// new queries over a KV cache) takes them one at a time, since a tile's
  /// rows past the queries would be computed for nothing.
  int attentionQueryTile(bool decoding) const;

  /// Keys per flash-attention key tile: the keys whose scores, maximum, sum
  /// and output are computed together before they are folded into a query
  /// row's state. A CPU decode over an i8 KV cache (`quantizedCache`) takes
  /// 4x the keys, as many bytes of rows per tile as an f32 cache's; a GPU
  /// half the keys, so a prefill block's shared memory fits what a launch
  /// may take (schedules/gpu: attentionSharedBytes). A CPU prefill whose
  /// products run on AMX tiles (`amxProducts`) takes twice the keys: its
  /// cost per tile (the externs' calls, the state's update) is paid half as
  /// often. (lowerings/Attention.cpp asks so only without a causal or
  /// windowed mask.)
  int attentionKeyTile(bool quantizedCache = false,
                       bool amxProducts = false) const;

  /// Runs of key tiles a decode's attention is cut into (flash decoding):
  /// independent states merged at the end, so one query's keys spread over
  /// CPU cores or GPU threads. 1 for a prefill.
  int attentionKeyChunks(bool decoding) const;

  /// A prefill's online-softmax state kept per query row as slots along one
  /// dim (the key tile's two rescale factors, the running max and sum, the
  /// running output), so each row's factors are computed once per key tile
  /// instead of once per feature: CPUs. GPU schedules and decodes keep a
  /// Tuple (max, sum, output) per feature.
  bool attentionStateSlots(bool decoding) const;

  /// bf16 and f16 tensors are stored as their bits (uint16) and converted
  /// with integer operations: OpenCL without cl_khr_fp16 (Halide's
  /// cl_half feature) has no half type to load them as, and Halide's CUDA
  /// code generator cannot widen bf16.
  bool storesHalfAsBits() const;

  /// GPU schedules' loops over a warp's lanes (gpu_lanes) keep each lane's
  /// values in its registers and read a neighbour's with a warp shuffle:
  /// CUDA. Halide 21's OpenCL back end refuses gpu_lanes; there the same
  /// loops run over threads with those values in shared memory.
  bool warpShuffles() const;

  /// 4-bit weights (a scale per group of inputs) are summed a group at a time
  /// and each group's sum scaled once (GemmStage::groupSums), rather than
  /// every weight scaled as it loads: CPUs, whose GEMM/GEMV of 4-bit weights
  /// is bound by its instructions. The GPU schedules stage weights, scaled,
  /// in shared memory per k-tile.
  bool reducesWeightGroups() const { return !isGpu(); }

  /// AVX512_BF16's dot product of bf16 pairs into f32 (vdpbf16ps), which
  /// --precision=bf16 needs: Halide's avx512_zen4, avx512_zen5 and
  /// avx512_sapphirerapids targets.
  bool hasBf16Dot() const;

  /// Whether vdpbf16ps (2 products per lane) beats two f32 FMAs: on Zen 4
  /// and 5 it issues as often as an FMA; on Sapphire Rapids (Halide's
  /// avx512_sapphirerapids, the AMX target) at half the FMA rate (one
  /// core: 88 against 180 GFLOP/s f32, bench/bf16_peak.c), so its GEMMs
  /// outside AMX tiles widen the pairs and use FMAs there.
  bool fastBf16Dot() const { return hasBf16Dot() && !hasAmx(); }

  /// AMX (Advanced Matrix Extensions): tile registers and their bf16
  /// matrix multiply into f32 (tdpbf16ps), Halide's avx512_sapphirerapids
  /// target. --precision=bf16 prefills then compute their GEMMs in AmxTile
  /// tiles (the micro-kernel compiler/driver/glue/amx.c).
  bool hasAmx() const;

  /// Whether a GEMM of bf16 pairs over `inFeatures` inputs is built for AMX
  /// tiles (lowerings/Linear.cpp; a decode step's from gemmRowTile
  /// sequences on): an AMX target and whole tiles of inputs
  /// (AmxTile::depth).
  bool usesAmxTiles(int64_t inFeatures) const;

  /// i32 lanes of an integer dot product's accumulator vector
  /// (Precision::Int8): each lane sums 4 bytes' products per step (VNNI's
  /// vpdpbusd; pmaddwd pairs on AVX2), so a step reads 4 x lanes bytes of
  /// one weight row.
  int int8DotLanes() const { return halide_.natural_vector_size<int32_t>(); }

  /// AVX512-VNNI's vpdpbusd (u8 x s8 quads summed into i32 lanes): Halide's
  /// avx512_sapphirerapids, avx512_zen4 and avx512_zen5 targets.
  bool hasInt8Dot() const;

  /// Outputs per panel of an i8 matrix packed into quads of inputs for
  /// Precision::Int8's GEMM (attn.pack_panels, [out / W, in / 4, W, 4]):
  /// one vector of i32 lanes (int8DotLanes), each summing one output's 4
  /// inputs per vpdpbusd. 0 without VNNI (hasInt8Dot): the matrices stay
  /// [out, in] for the dot products of lowerings/Int8Linear.cpp.
  int int8PanelWidth() const { return hasInt8Dot() ? int8DotLanes() : 0; }

  /// The int8 GEMM's register tile (schedules/cpu/QuantGemmSchedule.cpp):
  /// `int8GemmVectors` panels of outputs by `int8GemmRowTile` rows, each
  /// (vector, row) holding a block's i32 sums and its f32 total: 3 x 4 x 2
  /// = 24 of AVX-512's 32 registers, beside 3 weight vectors, a broadcast
  /// quad of inputs and the weights' offset. 4 rows divide a batch of 8 or
  /// 32 sequences and a prefill of 128: a 768 -> 3072 i8 GEMM of 32 rows
  /// (attn-run --bench, 1 thread, the shared 2-core AMD EPYC Zen 4, two
  /// rounds) ran at 255 GFLOP/s against 235 with 2 x 6 (36 rows computed),
  /// 4 x 3 and 1 x 8 as 3 x 4 within the noise; at 128 rows all alike.
  int int8GemmVectors() const { return 3; }
  int int8GemmRowTile() const { return 4; }
  /// Panels of a single row's task (a GEMV): read at once, that many
  /// streams of weights and independent sums per row, or in turn
  /// (int8GemvPanelsInTurn).
  int int8GemvVectors() const { return 4; }
  /// Whether a GEMV task reads its panels one after the other, a single
  /// stream of weights: on Zen 4 (TargetDesc.cpp says why).
  bool int8GemvPanelsInTurn() const;

  /// Options for the LLVM inside Halide that this target's code is compiled
  /// with (HL_LLVM_ARGS, read once per process; TargetDesc.cpp says why),
  /// space-separated; "" for none.
  std::string llvmOptions() const;

private:
  /// Whether the target has any of `features`.
  bool hasAny(std::initializer_list<Halide::Target::Feature> features) const;

  Halide::Target halide_;
};

/// The shape of one AMX multiply (tdpbf16ps): `rows` x `cols` f32 sums,
/// each over `depth` bf16 inputs; every operand row is 64 bytes, the most a
/// tile register holds. compiler/driver/glue/amx.c's kRows, kCols and
/// kDepth are the same numbers.
struct AmxTile {
  static constexpr int rows = 16;
  static constexpr int cols = 16;
  static constexpr int depth = 32;
};

/// What a library is built for: --target's variants and --schedule.
class BuildTarget {
public:
  /// `variants` as --target lists them, most capable first; the last, the
  /// baseline, is what a CPU must have. With more than one, every kernel is
  /// compiled once per variant and picks its variant by the CPU it runs on
  /// (Halide's multitarget).
  BuildTarget(std::vector<TargetDesc> variants, ScheduleKind schedule,
              Precision precision = Precision::F32)
      : variants_(std::move(variants)), schedule_(schedule),
        precision_(precision) {}

  const std::vector<TargetDesc> &variants() const { return variants_; }
  const TargetDesc &baseline() const { return variants_.back(); }
  ScheduleKind schedule() const { return schedule_; }
  Precision precision() const { return precision_; }
  /// The same variants and precision, scheduled by `schedule`.
  BuildTarget withSchedule(ScheduleKind schedule) const {
    return BuildTarget(variants_, schedule, precision_);
  }
  /// The same variants and schedule, at `precision`.
  BuildTarget withPrecision(Precision precision) const {
    return BuildTarget(variants_, schedule_, precision);
  }

  /// "a,b": the variants' Halide targets as the library's descriptor
  /// records them.
  std::string names() const;

  /// Output features per packed weight panel that the GEMMs of every
  /// variant read (the pass pipeline's panel width): the baseline's, for
  /// the hand schedule; 0 (plain [in, out] weights) for the others.
  int weightPanelWidth() const;

  /// Outputs per panel of i8 quads (TargetDesc::int8PanelWidth) that the
  /// pass pipeline packs i8 matrices into: the baseline's, for the hand
  /// schedule at Precision::Int8; 0 (kept [out, in]) otherwise.
  int int8PanelWidth() const;

  /// Whether kernels may call the AMX micro-kernel
  /// (compiler/driver/glue/amx.c), so the library must link it: bf16 pairs
  /// (Precision::BF16, the hand schedule) for a variant with AMX.
  bool usesAmxKernel() const;

private:
  std::vector<TargetDesc> variants_;
  ScheduleKind schedule_;
  Precision precision_;
};

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_TARGETDESC_H
