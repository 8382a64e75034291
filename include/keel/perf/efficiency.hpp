// keel::perf efficiency — the fraction of the roofline bound a tuned kernel reaches in practice,
// by device and op class, so a prediction says both "cannot be faster than" (the bound) and
// "expect about" (the bound divided by the fraction).
//
// Classes: gemm (matrix products with a weight operand and convolutions), attention (products
// of two activations: attention scores and their weighted sum), memory (everything whose time
// follows its bytes: elementwise, norms, data movement, pooling). A fraction applies to the
// side of the roofline the class lives on: compute for gemm and attention, bandwidth for
// memory; a node takes max(FLOPs / (peak x compute fraction), bytes / (bandwidth x memory
// fraction)).
// Where the numbers come from (efficiency_table() lists every row with its source):
//   - published measurements of one GPU (a GEMM benchmark, the FlashAttention papers), used
//     for that GPU only;
//   - a GPU without a measurement of its own takes the class default: the mean of the measured
//     GPUs' fractions for that class, and says so ("default: ...");
//   - memory-bound ops have no sourced fraction for the GPUs: 1 (expected = bound), said as
//     "unknown";
//   - a calibrated device (segment "cpu", `keel perf calibrate`) measured its own rates (FMA
//     loop, triad) and per-class ceilings (calibrate_torch.py), which are achieved rates
//     already: fraction 1, and the ceilings apply where they exist.
// Pure functions; thread-safe.
#pragma once

#include "keel/perf/gpu_database.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace keel::perf {

enum class op_class { gemm, attention, memory };
std::string_view name_of(op_class c) noexcept;  // "gemm", "attention", "memory"

struct efficiency {
  op_class cls = op_class::memory;
  double fraction = 1;  // (0, 1]
  bool known = false;   // false: no sourced number, fraction 1 (expected = bound)
  std::string basis;    // "measured on h100-sxm", "default: mean of ...", "calibrated", "unknown"
  std::string source;   // title and URL of the measurement(s); empty when unknown
};

// The fraction for `device` and class `c` (rules above). Never throws.
efficiency achievable_fraction(const gpu_spec& device, op_class c);

// One row per published measurement: GPU name, class, fraction, what was measured, source.
struct efficiency_row {
  std::string gpu;
  op_class cls;
  double fraction;
  std::string measured;  // what the fraction is of: "bf16 GEMM 780.2 of 989 TFLOP/s"
  std::string source;    // title <URL>
};
const std::vector<efficiency_row>& efficiency_table();

}  // namespace keel::perf
