//===- tools/attn-run/Profile.cpp - attn-run --profile --------------------===//
#include "Profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace attnrun {
namespace {

/// "k12_linear_gelu" -> "linear_gelu"; other names stay as they are.
std::string kindOf(const std::string &kernel) {
  size_t i = 1;
  if (kernel.empty() || kernel[0] != 'k')
    return kernel;
  while (i < kernel.size() &&
         std::isdigit(static_cast<unsigned char>(kernel[i])))
    ++i;
  return i > 1 && i < kernel.size() && kernel[i] == '_' ? kernel.substr(i + 1)
                                                        : kernel;
}

} // namespace

Profile::Profile(attn_model *model) : model(model) {
  attn_model_set_step_callback(model, &Profile::onStep, this);
}

Profile::~Profile() { attn_model_set_step_callback(model, nullptr, nullptr); }

void Profile::onStep(void *user, const attn_step_event *event) {
  auto *self = static_cast<Profile *>(user);
  Kind &kind = self->kinds[kindOf(event->kernel)];
  ++kind.calls;
  kind.seconds += event->seconds;
  kind.flops += event->flops;
  kind.bytes += event->bytes;
  if (++self->steps % event->num_steps == 0)
    ++self->runs;
}

void Profile::print(double runMs, uint64_t workspaceBytes) const {
  if (runs == 0)
    return;
  std::vector<std::pair<std::string, Kind>> rows(kinds.begin(), kinds.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.seconds > b.second.seconds;
  });
  double total = 0;
  for (const auto &row : rows)
    total += row.second.seconds;
  fmt::print("profile: {} run(s); {:.3f} ms per run, {:.3f} ms of it in "
             "kernels; peak extra memory {:.1f} MiB (the workspace arena)\n",
             runs, runMs, total * 1e3 / double(runs),
             double(workspaceBytes) / (1024.0 * 1024.0));
  fmt::print("{:<28} {:>10} {:>12} {:>7} {:>9} {:>9} {:>9}\n", "kernel",
             "calls/run", "ms/run", "%", "GFLOP/s", "GB/s", "flop/B");
  // "-" where the library counts no flops or a call took no measurable time.
  auto rate = [](double amount, double per) {
    return amount > 0 && per > 0 ? fmt::format("{:.1f}", amount / per * 1e-9)
                                 : std::string("-");
  };
  for (const auto &[name, kind] : rows) {
    std::string intensity = kind.flops > 0 && kind.bytes > 0
                                ? fmt::format("{:.2f}", kind.flops / kind.bytes)
                                : "-";
    fmt::print("{:<28} {:>10} {:>12.3f} {:>7.1f} {:>9} {:>9} {:>9}\n", name,
               kind.calls / runs, kind.seconds * 1e3 / double(runs),
               total > 0 ? 100.0 * kind.seconds / total : 0.0,
               rate(kind.flops, kind.seconds), rate(kind.bytes, kind.seconds),
               intensity);
  }
}

} // namespace attnrun
