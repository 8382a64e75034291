// keel::perf roofline — attainable FLOP/s = min(peak, AI x bandwidth) (Williams, Waterman,
// Patterson, CACM 52(4), 2009), applied to one op's FLOPs and bytes.
//
// An op_cost is what a kernel must do at minimum: its arithmetic and the bytes it must move
// between DRAM and the chip when every operand is read once and every result written once.
// evaluate() turns that into a lower bound on time on a device: max(FLOPs / peak, bytes /
// bandwidth). Pure functions; thread-safe.
#pragma once

#include <string_view>

namespace keel::perf {

struct op_cost {
  double flops = 0;  // floating-point operations (a multiply-add counts 2)
  double bytes = 0;  // DRAM traffic in bytes
  op_cost& operator+=(const op_cost& o) {
    flops += o.flops;
    bytes += o.bytes;
    return *this;
  }
};

enum class bound { compute, memory };
std::string_view name_of(bound b) noexcept;  // "compute" / "memory"

struct roofline_point {
  double intensity = 0;         // FLOPs per byte (infinity when bytes == 0)
  double ridge = 0;             // peak / bandwidth: the intensity where the bound changes
  double peak_flops = 0;        // FLOP/s
  double bandwidth = 0;         // bytes/s
  double attainable_flops = 0;  // min(peak, intensity x bandwidth)
  double seconds = 0;           // max(flops / peak, bytes / bandwidth)
  double fraction_of_peak = 0;  // attainable / peak
  bound limit = bound::compute;
};

// Preconditions: peak_flops > 0, bandwidth > 0, cost non-negative; else keel::invalid_argument.
roofline_point evaluate(const op_cost& cost, double peak_flops, double bandwidth);

}  // namespace keel::perf
