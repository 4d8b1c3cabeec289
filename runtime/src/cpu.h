//===- runtime/src/cpu.h - CPU features a model library needs ---*- C++ -*-===//
//
// A library's kernels are built for the Halide target in its descriptor
// (`x86-64-linux-avx2-fma-...`); run where an instruction set it uses is
// missing, they die of SIGILL. The loader compares the target's features with
// this CPU's first.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_CPU_H
#define ATTN_RUNTIME_CPU_H

#include <string>
#include <vector>

namespace attn::rt {

/// The dash-separated parts of the target a library needs: the last
/// (baseline) of a comma-separated list, e.g. {"x86", "64", "linux",
/// "avx2", ...}.
std::vector<std::string> baselineTargetParts(const std::string &targets);

/// The CPU features (`avx512f`, `avx2`, ...) that the x86 Halide target
/// string `target` needs and this CPU lacks, in a fixed order; empty when it
/// runs here, for other architectures, and for features this table does not
/// know (they are not checked). A comma-separated list of targets (a
/// multi-target library, most capable first) needs what its last one needs. The environment variable ATTN_CPU_FEATURES, a
/// comma-separated list such as "sse4.1,avx,avx2,fma,f16c", replaces the
/// detected features: a test hook that simulates an older CPU.
std::vector<std::string> missingCpuFeatures(const std::string &target);

/// Whether this CPU has `feature` (a name of the table: "amx-tile", ...),
/// or ATTN_CPU_FEATURES lists it.
bool cpuHas(const std::string &feature);

/// Whether a kernel of `targets` (a comma-separated list) may run AMX tile
/// instructions: one of them is Halide's avx512_sapphirerapids.
bool mayUseAmx(const std::string &targets);

/// Asks the OS for this process's AMX tile state, which Linux grants only on
/// request; false where it refuses (Linux before 5.16, a hypervisor that
/// hides AMX) or off x86-64. Asking again is harmless.
bool requestAmx();

/// A Halide target this CPU runs, for the advice in messages:
/// x86-64-linux-avx2-fma-f16c-sse41, x86-64-linux-sse41 or x86-64-linux.
std::string portableTarget();

/// The features of the table this CPU has (or ATTN_CPU_FEATURES lists),
/// space-separated, for messages.
std::string cpuFeatureSummary();

} // namespace attn::rt

#endif // ATTN_RUNTIME_CPU_H
