#include "keel/perf/roofline.hpp"

#include "keel/core/error.hpp"

#include <algorithm>
#include <limits>

namespace keel::perf {

std::string_view name_of(bound b) noexcept { return b == bound::compute ? "compute" : "memory"; }

roofline_point evaluate(const op_cost& cost, double peak_flops, double bandwidth) {
  if (!(peak_flops > 0) || !(bandwidth > 0)) {
    throw invalid_argument("roofline needs a positive peak and bandwidth");
  }
  if (cost.flops < 0 || cost.bytes < 0) throw invalid_argument("negative FLOPs or bytes");
  roofline_point p;
  p.peak_flops = peak_flops;
  p.bandwidth = bandwidth;
  p.ridge = peak_flops / bandwidth;
  p.intensity = cost.bytes > 0 ? cost.flops / cost.bytes : std::numeric_limits<double>::infinity();
  const double t_compute = cost.flops / peak_flops;
  const double t_memory = cost.bytes / bandwidth;
  p.seconds = std::max(t_compute, t_memory);
  p.limit = t_compute >= t_memory ? bound::compute : bound::memory;
  p.attainable_flops = std::min(peak_flops, p.intensity * bandwidth);
  p.fraction_of_peak = p.attainable_flops / peak_flops;
  return p;
}

}  // namespace keel::perf
