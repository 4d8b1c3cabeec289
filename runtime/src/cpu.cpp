//===- runtime/src/cpu.cpp - CPU features a model library needs -----------===//
#include "cpu.h"

#include <cstdlib>
#include <sstream>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace attn::rt {
namespace {

/// The CPU features the checks know, in report order, each with its test.
/// __builtin_cpu_supports needs a literal, hence one lambda per feature.
struct Feature {
  const char *name;
  bool (*present)();
};

#if defined(__x86_64__)
/// AMX's tile registers and bf16 multiply (CPUID leaf 7: EDX bits 24, 22),
/// which __builtin_cpu_supports does not know before GCC 13.
bool amxBit(unsigned bit) {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> bit & 1);
}
#endif

#if defined(__x86_64__) || defined(__i386__)
#define ATTN_CPU(name)                                                         \
  {                                                                            \
    name, [] { return bool(__builtin_cpu_supports(name)); }                    \
  }
const Feature kFeatures[] = {
    ATTN_CPU("sse4.1"),
    ATTN_CPU("avx"),
    ATTN_CPU("avx2"),
    ATTN_CPU("fma"),
    ATTN_CPU("f16c"),
    ATTN_CPU("fma4"),
    ATTN_CPU("avx512f"),
    ATTN_CPU("avx512cd"),
    ATTN_CPU("avx512vl"),
    ATTN_CPU("avx512bw"),
    ATTN_CPU("avx512dq"),
    ATTN_CPU("avx512ifma"),
    ATTN_CPU("avx512vbmi"),
    ATTN_CPU("avx512vbmi2"),
    ATTN_CPU("avx512vnni"),
    ATTN_CPU("avx512bf16"),
    ATTN_CPU("avx512bitalg"),
    ATTN_CPU("avx512vpopcntdq"),
    ATTN_CPU("avxvnni"),
#if defined(__x86_64__)
    {"amx-tile", [] { return amxBit(24); }},
    {"amx-bf16", [] { return amxBit(22); }},
#endif
};
#undef ATTN_CPU
#else
const Feature kFeatures[] = {{"", nullptr}};
#endif

/// What each x86 feature of a Halide target string requires of the CPU
/// (Halide's Target::Feature documentation).
struct TargetFeature {
  const char *halide;
  std::vector<const char *> cpu;
};

const std::vector<TargetFeature> &targetFeatures() {
  static const std::vector<TargetFeature> table = {
      {"sse41", {"sse4.1"}},
      {"avx", {"avx"}},
      {"avx2", {"avx2"}},
      {"fma", {"fma"}},
      {"f16c", {"f16c"}},
      {"fma4", {"fma4"}},
      {"avxvnni", {"avxvnni"}},
      {"avx512", {"avx512f", "avx512cd"}},
      {"avx512_skylake",
       {"avx512f", "avx512cd", "avx512vl", "avx512bw", "avx512dq"}},
      {"avx512_cannonlake",
       {"avx512f", "avx512cd", "avx512vl", "avx512bw", "avx512dq", "avx512ifma",
        "avx512vbmi"}},
      // Halide's Sapphire Rapids target includes AMX.
      {"avx512_sapphirerapids",
       {"avx512f", "avx512cd", "avx512vl", "avx512bw", "avx512dq", "avx512ifma",
        "avx512vbmi", "avx512bf16", "avx512vnni", "amx-tile", "amx-bf16"}},
      {"avx512_zen4",
       {"avx512f", "avx512cd", "avx512vl", "avx512bw", "avx512dq", "avx512ifma",
        "avx512vbmi", "avx512vbmi2", "avx512bf16", "avx512vnni", "avx512bitalg",
        "avx512vpopcntdq"}},
  };
  return table;
}

bool isX86(const std::string &target) { return target.rfind("x86-", 0) == 0; }

/// This CPU's features of kFeatures, or the list in ATTN_CPU_FEATURES.
std::vector<std::string> cpuFeatures() {
  std::vector<std::string> have;
  if (const char *env = std::getenv("ATTN_CPU_FEATURES")) {
    std::stringstream list(env);
    for (std::string name; std::getline(list, name, ',');)
      if (!name.empty())
        have.push_back(name);
    return have;
  }
  for (const Feature &f : kFeatures)
    if (f.present && f.present())
      have.push_back(f.name);
  return have;
}

bool contains(const std::vector<std::string> &list, const std::string &s) {
  for (const std::string &x : list)
    if (x == s)
      return true;
  return false;
}

/// The dash-separated parts of one Halide target string.
std::vector<std::string> targetParts(const std::string &target) {
  std::stringstream stream(target);
  std::vector<std::string> parts;
  for (std::string part; std::getline(stream, part, '-');)
    parts.push_back(part);
  return parts;
}

} // namespace

std::vector<std::string> baselineTargetParts(const std::string &targets) {
  // A multi-target library lists its targets most capable first; each of
  // its kernels runs the best one this CPU has, so it needs only the last.
  return targetParts(targets.substr(targets.rfind(',') + 1));
}

std::vector<std::string> missingCpuFeatures(const std::string &targets) {
  std::vector<std::string> missing;
  if (!isX86(targets.substr(targets.rfind(',') + 1)))
    return missing;
  std::vector<std::string> have = cpuFeatures();
  for (const std::string &part : baselineTargetParts(targets))
    for (const TargetFeature &f : targetFeatures())
      if (part == f.halide)
        for (const char *need : f.cpu)
          if (!contains(have, need) && !contains(missing, need))
            missing.push_back(need);
  return missing;
}

bool cpuHas(const std::string &feature) {
  return contains(cpuFeatures(), feature);
}

bool mayUseAmx(const std::string &targets) {
  std::stringstream list(targets);
  for (std::string target; std::getline(list, target, ',');)
    if (isX86(target) && contains(targetParts(target), "avx512_sapphirerapids"))
      return true;
  return false;
}

bool requestAmx() {
#if defined(__x86_64__)
  // Linux (5.16 on) gives a process AMX's tile state only on request
  // (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); the first tile
  // instruction of a process without it dies of SIGILL. Halide 21's
  // generated code does not ask.
  constexpr long kReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

std::string portableTarget() {
  std::vector<std::string> have = cpuFeatures();
  if (contains(have, "avx2") && contains(have, "fma") &&
      contains(have, "f16c") && contains(have, "sse4.1"))
    return "x86-64-linux-avx2-fma-f16c-sse41";
  return contains(have, "sse4.1") ? "x86-64-linux-sse41" : "x86-64-linux";
}

std::string cpuFeatureSummary() {
  std::string s;
  for (const std::string &f : cpuFeatures())
    s += (s.empty() ? "" : " ") + f;
  return s.empty() ? "none of them" : s;
}

} // namespace attn::rt
