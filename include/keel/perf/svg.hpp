// keel::perf::roofline_svg — a self-contained SVG roofline chart (log-log: FLOP/byte against
// FLOP/s) with the device's roof and one labelled point per op. Pure function; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace keel::perf {

struct svg_point {
  std::string label;
  double intensity = 0;  // FLOP/byte
  double flops = 0;      // achieved FLOP/s (FLOPs / predicted time)
};

// peak_flops > 0 and bandwidth > 0 (bytes/s); points with non-finite or non-positive
// coordinates are skipped.
std::string roofline_svg(const std::string& title, double peak_flops, double bandwidth,
                         const std::vector<svg_point>& points);

}  // namespace keel::perf
