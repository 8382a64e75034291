// keel::perf::compare_gpus — two GPUs side by side: every published (or derived) rate, memory,
// bandwidth, NVLink and PCIe bandwidth, cache, power, price and the FP32 ridge point, with the
// ratio B/A. A row is kept
// when either GPU has the number. Pure function of the two specs; thread-safe.
#pragma once

#include "keel/perf/gpu_database.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace keel::perf {

struct gpu_compare_row {
  std::string metric;  // "fp32", "bandwidth_gbs", "fp32_ridge_flops_per_byte", ...
  std::optional<double> a, b;
  std::optional<double> ratio;  // b / a when both are known and a > 0
};

struct gpu_comparison {
  const gpu_spec* a = nullptr;  // as passed: must outlive the comparison
  const gpu_spec* b = nullptr;
  std::vector<gpu_compare_row> rows;
};

gpu_comparison compare_gpus(const gpu_spec& a, const gpu_spec& b);

// a, b (as to_json(gpu_spec)), rows (metric, a, b, ratio; null where unknown).
nlohmann::json to_json(const gpu_comparison& comparison);

}  // namespace keel::perf
