//===- test/unit/codegen/TargetTest.cpp - --target parsed once ------------===//
//
// codegen::parseTarget and the schedules::BuildTarget it makes: the
// variants in --target's order, the baseline last, the names the library's
// descriptor records, and the decisions the pass pipeline and the
// algorithm read from them.
//
//===----------------------------------------------------------------------===//
#include "attn/model_abi.h"
#include "compiler/codegen/KernelCodegen.h"
#include "schedules/gpu/GpuSchedules.h"

#include <gtest/gtest.h>

using namespace attnc;
using schedules::BuildTarget;
using schedules::ScheduleKind;

namespace {

/// The x86-64 Linux targets below are only this machine's kind of target
/// on an x86-64 Linux host.
bool hostIsX86Linux() {
  Halide::Target host = Halide::get_host_target();
  return host.arch == Halide::Target::X86 && host.bits == 64 &&
         host.os == Halide::Target::Linux;
}

BuildTarget parse(llvm::StringRef name,
                  ScheduleKind schedule = ScheduleKind::Hand) {
  llvm::Expected<BuildTarget> target = codegen::parseTarget(name, schedule);
  if (!target) {
    ADD_FAILURE() << llvm::toString(target.takeError());
    return BuildTarget({schedules::TargetDesc(Halide::get_host_target())},
                       schedule);
  }
  return std::move(*target);
}

std::string parseError(llvm::StringRef name) {
  llvm::Expected<BuildTarget> target =
      codegen::parseTarget(name, ScheduleKind::Hand);
  if (target)
    return "";
  return llvm::toString(target.takeError());
}

TEST(Target, MultiIsAvx512ThenTheAvx2Baseline) {
  if (!hostIsX86Linux())
    GTEST_SKIP() << "not an x86-64 Linux host";
  BuildTarget target = parse("x86-64-multi");
  ASSERT_EQ(target.variants().size(), 2u);
  EXPECT_EQ(&target.baseline(), &target.variants()[1]);
  EXPECT_EQ(target.names(), "x86-64-linux-avx512_skylake,"
                            "x86-64-linux-avx2-f16c-fma-sse41");
  // The weights are packed for the baseline's GEMM tile.
  EXPECT_EQ(target.baseline().gemmPanelWidth(), 16);
  EXPECT_EQ(target.weightPanelWidth(), 16);
  // The AVX-512 variant schedules for its 32 registers, though Halide's
  // avx512_skylake target does not list the AVX512 feature itself.
  EXPECT_EQ(target.variants()[0].vectorRegisters(), 32);
  EXPECT_EQ(target.variants()[0].gemmPanelWidth(), 64);
  EXPECT_EQ(target.baseline().vectorRegisters(), 16);
  // A register tile of 6 rows on either: 6 x 4 + 4 + 1 of 32, 6 x 2 + 2 + 1
  // of 16 (the rows' accumulators, a panel's weights, a broadcast input).
  EXPECT_EQ(target.variants()[0].gemmRowTile(), 6);
  EXPECT_EQ(target.baseline().gemmRowTile(), 6);
  EXPECT_EQ(target.schedule(), ScheduleKind::Hand);
  EXPECT_EQ(codegen::modelDevice(target), ATTN_MODEL_DEVICE_HOST);
}

TEST(Target, OnlyTheHandScheduleReadsPanels) {
  if (!hostIsX86Linux())
    GTEST_SKIP() << "not an x86-64 Linux host";
  BuildTarget hand = parse("x86-64-linux-avx2-fma-f16c-sse41");
  EXPECT_EQ(hand.weightPanelWidth(), 16);
  for (ScheduleKind kind :
       {ScheduleKind::Auto, ScheduleKind::Naive, ScheduleKind::Layout})
    EXPECT_EQ(hand.withSchedule(kind).weightPanelWidth(), 0);
  EXPECT_EQ(hand.withSchedule(ScheduleKind::Layout).names(), hand.names());
}

TEST(Target, Int8QuadsOnlyWithVnni) {
  using schedules::Precision;
  if (!hostIsX86Linux())
    GTEST_SKIP() << "not an x86-64 Linux host";
  auto width = [](llvm::StringRef name, ScheduleKind schedule,
                  Precision precision) {
    return parse(name, schedule).withPrecision(precision).int8PanelWidth();
  };
  // i8 matrices are packed into quads for the int8 GEMM at --precision=int8
  // with the hand schedule, on targets with VNNI's vpdpbusd: a panel of 16
  // outputs, one zmm of i32 lanes.
  for (const char *vnni :
       {"x86-64-linux-avx512_zen4", "x86-64-linux-avx512_sapphirerapids"}) {
    EXPECT_EQ(width(vnni, ScheduleKind::Hand, Precision::Int8), 16) << vnni;
    EXPECT_EQ(width(vnni, ScheduleKind::Hand, Precision::F32), 0) << vnni;
    EXPECT_EQ(width(vnni, ScheduleKind::Auto, Precision::Int8), 0) << vnni;
  }
  // Without VNNI, or a baseline without it, they stay [out, in].
  for (const char *plain : {"x86-64-linux-avx512_skylake",
                                "x86-64-linux-avx2-fma-f16c", "x86-64-multi"})
    EXPECT_EQ(width(plain, ScheduleKind::Hand, Precision::Int8), 0) << plain;
  // The GEMM's register tile fits: an i32 sum and an f32 total per (vector,
  // row), the weight vectors, a broadcast quad and the weights' offset.
  BuildTarget zen4Target = parse("x86-64-linux-avx512_zen4");
  const schedules::TargetDesc &zen4 = zen4Target.baseline();
  int vectors = zen4.int8GemmVectors(), rows = zen4.int8GemmRowTile();
  EXPECT_LE(2 * vectors * rows + vectors + 2, zen4.vectorRegisters());
}

TEST(Target, AttentionTiles) {
  BuildTarget cpu = parse("host");
  const schedules::TargetDesc &desc = cpu.baseline();
  EXPECT_EQ(desc.attentionQueryTile(/*decoding=*/false), 32);
  EXPECT_EQ(desc.attentionQueryTile(/*decoding=*/true), 1);
  EXPECT_EQ(desc.attentionKeyTile(), 64);
  EXPECT_EQ(desc.attentionKeyTile(/*quantizedCache=*/true), 256);
  // On AMX tiles: whole tiles of keys (the externs of compiler/driver/glue/
  // amx.c refuse others).
  int amxKeys = desc.attentionKeyTile(false, /*amxProducts=*/true);
  EXPECT_EQ(amxKeys, 128);
  EXPECT_EQ(amxKeys % schedules::AmxTile::depth, 0);
  EXPECT_EQ(desc.attentionKeyChunks(/*decoding=*/false), 1);
  EXPECT_EQ(desc.attentionKeyChunks(/*decoding=*/true), 8);
}

TEST(Target, GpuTargets) {
  BuildTarget cl = parse("host-opencl");
  ASSERT_EQ(cl.variants().size(), 1u);
  EXPECT_EQ(cl.baseline().device(), schedules::Device::OpenCL);
  EXPECT_EQ(cl.weightPanelWidth(), 0);
  EXPECT_EQ(cl.baseline().gemmRowTile(), 1);
  EXPECT_EQ(cl.baseline().attentionKeyChunks(/*decoding=*/true), 16);
  // A prefill's flash-attention block keeps its tiles and states in shared
  // memory at head dim 64 (GPT-2, BERT), within what a launch may take.
  const schedules::TargetDesc &gpu = cl.baseline();
  EXPECT_LE(schedules::attentionSharedBytes(gpu.attentionQueryTile(false),
                                            gpu.attentionKeyTile(), 64, 64),
            schedules::kGpuSharedBytes);
  EXPECT_FALSE(cl.baseline().warpShuffles());
  EXPECT_EQ(codegen::modelDevice(cl), ATTN_MODEL_DEVICE_OPENCL);
  EXPECT_FALSE(bool(codegen::checkSchedule(cl)));
  llvm::Error autoOnGpu =
      codegen::checkSchedule(cl.withSchedule(ScheduleKind::Auto));
  ASSERT_TRUE(bool(autoOnGpu));
  EXPECT_NE(llvm::toString(std::move(autoOnGpu)).find("runs on opencl"),
            std::string::npos);

  // Without a capability: Turing's, the oldest CUDA 13 supports.
  BuildTarget cuda = parse("host-cuda");
  EXPECT_EQ(cuda.baseline().device(), schedules::Device::Cuda);
  EXPECT_TRUE(cuda.baseline().warpShuffles());
  EXPECT_TRUE(
      cuda.baseline().halide().has_feature(Halide::Target::CUDACapability75));
}

TEST(Target, Bf16PrecisionNeedsAvx512Bf16Everywhere) {
  using schedules::Precision;
  EXPECT_EQ(schedules::parsePrecision("f32"), Precision::F32);
  EXPECT_EQ(schedules::parsePrecision("bf16"), Precision::BF16);
  EXPECT_EQ(schedules::parsePrecision("BF16"), std::nullopt);
  EXPECT_EQ(schedules::parsePrecision("fp16"), std::nullopt);
  if (!hostIsX86Linux())
    GTEST_SKIP() << "not an x86-64 Linux host";
  auto check = [](llvm::StringRef name, ScheduleKind schedule) {
    BuildTarget target = parse(name, schedule).withPrecision(Precision::BF16);
    EXPECT_EQ(target.precision(), Precision::BF16);
    // The precision survives a change of schedule.
    EXPECT_EQ(target.withSchedule(ScheduleKind::Layout).precision(),
              Precision::BF16);
    llvm::Error error = codegen::checkPrecision(target);
    return error ? llvm::toString(std::move(error)) : std::string();
  };
  EXPECT_EQ(check("x86-64-linux-avx512_zen4", ScheduleKind::Hand), "");
  EXPECT_EQ(check("x86-64-linux-avx512_sapphirerapids", ScheduleKind::Hand),
            "");
  EXPECT_NE(check("x86-64-linux-avx512_skylake", ScheduleKind::Hand), "");
  // Every variant, not only the first.
  EXPECT_NE(check("x86-64-linux-avx512_zen4,x86-64-linux-avx2-fma",
                  ScheduleKind::Hand)
                .find("'x86-64-linux-avx2-fma' lacks it"),
            std::string::npos);
  EXPECT_NE(check("x86-64-linux-avx512_zen4", ScheduleKind::Naive), "");
  // f32, the default, asks nothing of the target.
  EXPECT_FALSE(bool(codegen::checkPrecision(parse("x86-64-linux-avx2"))));
}

TEST(Target, AmxTilesOnlyOnSapphireRapids) {
  if (!hostIsX86Linux())
    GTEST_SKIP() << "not an x86-64 Linux host";
  BuildTarget sprTarget = parse("x86-64-linux-avx512_sapphirerapids");
  BuildTarget zen4Target = parse("x86-64-linux-avx512_zen4");
  const schedules::TargetDesc &spr = sprTarget.baseline();
  const schedules::TargetDesc &zen4 = zen4Target.baseline();
  // A prefill GEMM takes AMX tiles where the target has AMX and its inputs
  // are whole tiles (a tile row is 32 bf16 inputs).
  EXPECT_TRUE(spr.hasAmx());
  EXPECT_TRUE(spr.usesAmxTiles(768));
  EXPECT_TRUE(spr.usesAmxTiles(schedules::AmxTile::depth));
  EXPECT_FALSE(spr.usesAmxTiles(16));
  EXPECT_FALSE(spr.usesAmxTiles(770));
  EXPECT_FALSE(zen4.hasAmx());
  EXPECT_FALSE(zen4.usesAmxTiles(768));
  EXPECT_FALSE(parse("x86-64-multi").baseline().usesAmxTiles(768));
  // Libraries link the AMX micro-kernel only where a bf16 GEMM may call it:
  // a variant with AMX, hand-scheduled bf16 pairs.
  EXPECT_TRUE(sprTarget.withPrecision(schedules::Precision::BF16).usesAmxKernel());
  EXPECT_TRUE(parse("x86-64-linux-avx512_sapphirerapids,"
                    "x86-64-linux-avx512_zen4")
                  .withPrecision(schedules::Precision::BF16)
                  .usesAmxKernel());
  EXPECT_FALSE(sprTarget.usesAmxKernel());
  EXPECT_FALSE(zen4Target.withPrecision(schedules::Precision::BF16).usesAmxKernel());
  EXPECT_FALSE(parse("x86-64-linux-avx512_sapphirerapids", ScheduleKind::Naive)
                   .withPrecision(schedules::Precision::BF16)
                   .usesAmxKernel());
  // One tile register holds 1 KiB: a tile's f32 sums and each operand's
  // 64-byte rows.
  EXPECT_EQ(4 * schedules::AmxTile::rows * schedules::AmxTile::cols, 1024);
  EXPECT_EQ(2 * schedules::AmxTile::depth, 64);
  // vdpbf16ps where it beats two FMAs (Zen 4), FMAs on Sapphire Rapids.
  EXPECT_TRUE(zen4.fastBf16Dot());
  EXPECT_FALSE(spr.fastBf16Dot());
  EXPECT_FALSE(parse("x86-64-linux-avx512_skylake").baseline().fastBf16Dot());
}

TEST(Target, BadTargetsSayWhy) {
  EXPECT_NE(parseError("foo").find("unknown target 'foo': not a Halide "
                                   "target string"),
            std::string::npos);
  EXPECT_NE(parseError("host-opencl,host").find("a GPU target is built alone"),
            std::string::npos);
  EXPECT_NE(parseError("host-metal").find("no schedules for metal"),
            std::string::npos);
}

} // namespace

TEST(Target, OnlyZen4CompilesWithoutMachineLicm) {
  if (!hostIsX86Linux())
    GTEST_SKIP() << "not an x86-64 Linux host";
  // LLVM's -mcpu=znver4 spilled a GEMM tile's accumulators to keep an
  // epilogue's constants in registers (TargetDesc::llvmOptions).
  EXPECT_EQ(parse("x86-64-linux-avx512_zen4", ScheduleKind::Hand)
                .baseline()
                .llvmOptions(),
            "-disable-machine-licm");
  for (const char *other :
       {"x86-64-linux-avx512_sapphirerapids", "x86-64-linux-avx512_skylake",
        "x86-64-linux-avx-avx2-f16c-fma-sse41"})
    EXPECT_EQ(parse(other, ScheduleKind::Hand).baseline().llvmOptions(), "")
        << other;
}
