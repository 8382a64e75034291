#include "keel/perf/memory_fit.hpp"

#include "keel/core/error.hpp"
#include "keel/perf/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace keel::perf {

memory_fit check_memory_fit(const memory_need& need, const gpu_spec& device, int devices,
                            double usable_fraction) {
  const std::pair<const char*, double> parts[] = {{"weights", need.weights},
                                                  {"KV cache", need.kv_cache},
                                                  {"activations", need.activations},
                                                  {"gradients", need.gradients},
                                                  {"optimizer state", need.optimizer}};
  for (const auto& [what, bytes] : parts) {
    if (!std::isfinite(bytes) || bytes < 0)
      throw invalid_argument(fmt::format("memory need: {} must be >= 0 (got {})", what, bytes));
  }
  if (!(usable_fraction > 0 && usable_fraction <= 1))
    throw invalid_argument(
        fmt::format("usable memory fraction must be in (0, 1] (got {})", usable_fraction));
  if (devices < 1) throw invalid_argument("devices must be >= 1");
  if (!(device.memory_gb > 0))
    throw invalid_argument(fmt::format("{} has no memory size in the database", device.name));

  memory_fit f;
  f.need = need;
  f.devices = devices;
  f.device = device.name;
  f.capacity = device.memory_bytes() * usable_fraction;
  const double total = need.total();
  f.fits = total <= f.capacity;
  f.shortfall = f.fits ? 0 : total - f.capacity;
  f.headroom = f.fits ? f.capacity - total : 0;

  std::vector<std::pair<const char*, double>> shown;
  for (const auto& p : parts)
    if (p.second > 0) shown.push_back(p);
  std::stable_sort(shown.begin(), shown.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string list;
  for (const auto& [what, bytes] : shown)
    list += fmt::format("{}{} {}", list.empty() ? "" : ", ", what, si_text(bytes, "B"));
  const char* per = devices > 1 ? "per GPU" : "on one GPU";
  if (f.fits) {
    f.message = fmt::format("fits: {} of {} {} ({})", si_text(total, "B"), si_text(f.capacity, "B"),
                            per, list);
  } else {
    f.message =
        fmt::format("does not fit: needs {} {} ({}) but {} has {}, {} short", si_text(total, "B"),
                    per, list, device.name, si_text(f.capacity, "B"), si_text(f.shortfall, "B"));
  }
  return f;
}

}  // namespace keel::perf
