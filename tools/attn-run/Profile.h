//===- tools/attn-run/Profile.h - attn-run --profile ------------*- C++ -*-===//
//
// Times every kernel call of the runs it watches (the runtime's step
// callback) and prints where a run's time goes, per kind of kernel.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TOOLS_ATTN_RUN_PROFILE_H
#define ATTNC_TOOLS_ATTN_RUN_PROFILE_H

#include "attn/attn.h"

#include <map>
#include <string>

namespace attnrun {

class Profile {
public:
  /// Watches the runs of `model` from now until the Profile is destroyed.
  explicit Profile(attn_model *model);
  ~Profile();
  Profile(const Profile &) = delete;
  Profile &operator=(const Profile &) = delete;

  /// The table: per kernel kind (the kernel's name without its `kN_`
  /// prefix, so the same layer's kernels add up), calls per run, ms per run,
  /// % of the kernels' time, GFLOP/s where the library counts flops, GB/s of
  /// the buffers the calls are passed and flops per such byte (the
  /// arithmetic intensity a roofline places them at);
  /// `runMs`, the mean run measured outside, and `workspaceBytes`, the run's
  /// peak extra memory, head it.
  void print(double runMs, uint64_t workspaceBytes) const;

  /// The floating-point operations one call of `run` does, as the library
  /// counts them (0 when it does not).
  template <typename Run> static double flopsOf(attn_model *model, Run run) {
    double flops = 0;
    attn_model_set_step_callback(
        model,
        [](void *user, const attn_step_event *e) {
          *static_cast<double *>(user) += e->flops;
        },
        &flops);
    run();
    attn_model_set_step_callback(model, nullptr, nullptr);
    return flops;
  }

private:
  struct Kind {
    int64_t calls = 0;
    double seconds = 0, flops = 0, bytes = 0;
  };
  static void onStep(void *user, const attn_step_event *event);

  attn_model *model;
  std::map<std::string, Kind> kinds;
  int64_t steps = 0, runs = 0;
};

} // namespace attnrun

#endif // ATTNC_TOOLS_ATTN_RUN_PROFILE_H
