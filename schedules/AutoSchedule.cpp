//===- schedules/AutoSchedule.cpp - Halide's autoscheduler ----------------===//
//
// Which autoscheduler: Mullapudi2016 by default (ATTNC_AUTOSCHEDULER in
// cmake/AttncHalide.cmake). GPT-2 block, B=1 S=128, `attn-run --bench 20`,
// median (best) of several rounds on the shared 2-core Sapphire Rapids
// machine; the second core was often busy, hence the spread at 2 threads
// (hand: the hand schedule of commit 69272bb, faster since):
//
//                         compile            1 thread      2 threads
//   hand                  2.7-3.5 s          65 ms         36-69 (34) ms
//   Mullapudi2016         3.5-6 s            175-185 ms    93-180 (82) ms
//   Adams2019 (beam 32)   128 s, 2.9 GB RSS  285-300 ms    120-250 (103) ms
//
// Adams2019 with the weights built into the plugin takes ~35x longer to
// compile (a beam search over the whole pipeline, too slow for the test
// suite) and its schedules run slower; with beam_size=1 it compiles fast but
// unrolls the attention's dynamic-extent key loop, which Halide rejects.
// Neither register-blocks the GEMMs as the hand schedule does, which is most
// of the gap. S estimated at 1024 instead of 128 ran the same within noise.
//
//===----------------------------------------------------------------------===//
#include "schedules/AutoSchedule.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#ifndef ATTNC_AUTOSCHEDULER
#error "ATTNC_AUTOSCHEDULER must name the autoscheduler (see CMakeLists.txt)"
#endif
#ifndef ATTNC_AUTOSCHEDULER_PLUGIN
#error "ATTNC_AUTOSCHEDULER_PLUGIN must be the plugin's path, or empty"
#endif
#ifndef ATTNC_INSTALL_PRIVATE_LIBDIR
#error "ATTNC_INSTALL_PRIVATE_LIBDIR must be where an install keeps the plugin"
#endif

using namespace Halide;

namespace attnc::schedules {
namespace {

/// The cores the autoscheduler plans for. Fixed rather than the build
/// machine's count, so a library does not depend on where it was compiled;
/// 2 is the CI machine's count (16 measured no faster there, GPT-2 1x128).
constexpr const char *kParallelism = "2";

/// Overrides the installed plugin and the one found at build time.
constexpr const char *kPluginEnv = "ATTNC_AUTOSCHEDULER_PLUGIN";

/// The plugin installed with this attnc (tools/attnc/CMakeLists.txt):
/// <prefix>/lib/attnc/<file> for <prefix>/bin/attnc, wherever the prefix
/// was moved; empty when there is none (a build tree's attnc).
std::string installedPlugin(const std::string &file) {
  std::error_code ec;
  std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return {};
  std::filesystem::path plugin =
      exe.parent_path().parent_path() / ATTNC_INSTALL_PRIVATE_LIBDIR / file;
  return std::filesystem::is_regular_file(plugin, ec) ? plugin.string()
                                                      : std::string();
}

/// Loads the plugin once per process; returns the error message, if any.
const std::string &loadPlugin() {
  static const std::string error = []() -> std::string {
    std::string file = "libautoschedule_" + std::string(ATTNC_AUTOSCHEDULER);
    for (char &c : file)
      c = char(std::tolower((unsigned char)c));
    const char *env = std::getenv(kPluginEnv);
    bool fromEnv = env && *env;
    std::string installed =
        fromEnv ? std::string() : installedPlugin(file + ".so");
    std::string path = fromEnv              ? std::string(env)
                       : !installed.empty() ? installed
                                            : ATTNC_AUTOSCHEDULER_PLUGIN;
    std::string fix = "; set " + std::string(kPluginEnv) + " to the path of " +
                      file +
                      ".so (in the halide wheel's lib64), or reconfigure "
                      "attnc with -DHALIDE_ROOT=<that wheel's install_dir()> "
                      "and rebuild, or use --schedule=hand";
    if (path.empty())
      return "this attnc was built without Halide's " +
             std::string(ATTNC_AUTOSCHEDULER) +
             " autoscheduler (cmake did not find " + file + ".so)" + fix;
    std::string where = fromEnv ? std::string("(from ") + kPluginEnv + ")"
                        : !installed.empty() ? "(installed with attnc)"
                                             : "(found when attnc was built)";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      return "the " + std::string(ATTNC_AUTOSCHEDULER) +
             " autoscheduler plugin '" + path + "' " + where +
             " does not exist" +
             (fromEnv ? "" : ": the Halide SDK moved or was removed") + fix;
    try {
      load_plugin(path);
    } catch (const Error &e) {
      std::string why = e.what();
      while (!why.empty() && std::isspace((unsigned char)why.back()))
        why.pop_back();
      return "cannot load the autoscheduler plugin '" + path + "' " + where +
             ": " + why + fix;
    }
    return {};
  }();
  return error;
}

/// The autoscheduler plans for the estimates, but one library serves every
/// extent from 1 to the bound, and a split it leaves to TailStrategy::Auto
/// becomes ShiftInwards or RoundUp, which needs extent >= factor (S = 1 with
/// rows split by 16 fails with "Output buffer ... is accessed at -15"). So
/// every split of a pure var gets GuardWithIf instead: correct for any extent,
/// at the cost of a tail loop. RVar splits are GuardWithIf already.
void guardTails(const Pipeline &pipeline) {
  std::vector<Internal::Function> outputs;
  for (const Func &f : pipeline.outputs())
    outputs.push_back(f.function());
  auto guard = [](Internal::StageSchedule &schedule) {
    for (Internal::Split &split : schedule.splits())
      if (split.split_type == Internal::Split::SplitVar &&
          (split.tail == TailStrategy::Auto ||
           split.tail == TailStrategy::RoundUp ||
           split.tail == TailStrategy::ShiftInwards ||
           split.tail == TailStrategy::RoundUpAndBlend ||
           split.tail == TailStrategy::ShiftInwardsAndBlend))
        split.tail = TailStrategy::GuardWithIf;
  };
  for (auto &[name, function] : Internal::build_environment(outputs)) {
    Internal::Function f = function; // a handle: edits the pipeline's Func
    guard(f.definition().schedule());
    for (size_t i = 0; i < f.updates().size(); ++i)
      guard(f.update(int(i)).schedule());
  }
}

} // namespace

const char *autoschedulerName() { return ATTNC_AUTOSCHEDULER; }

std::string scheduleAuto(Pipeline &pipeline, std::vector<ImageParam> &params,
                         const std::vector<Extents> &inputEstimates,
                         const std::vector<Extents> &outputEstimates,
                         const Target &target) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (const std::string &error = loadPlugin(); !error.empty())
    return error;
  for (size_t i = 0; i < params.size() && i < inputEstimates.size(); ++i)
    for (size_t d = 0; d < inputEstimates[i].size(); ++d)
      params[i].dim(int(d)).set_estimate(0, int(inputEstimates[i][d]));
  std::vector<Func> outputs = pipeline.outputs();
  for (size_t i = 0; i < outputs.size() && i < outputEstimates.size(); ++i) {
    Region region;
    for (int64_t extent : outputEstimates[i])
      region.emplace_back(0, int(extent));
    outputs[i].set_estimates(region);
  }
  pipeline.apply_autoscheduler(
      target, AutoschedulerParams{ATTNC_AUTOSCHEDULER,
                                  {{"parallelism", kParallelism}}});
  guardTails(pipeline);
  return {};
}

} // namespace attnc::schedules
