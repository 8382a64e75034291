// Range checks of the perf requests, with the messages the CLI prints for the same options
// (tools/keel/cli.hpp, number_check): "--batch: nan is not a finite number, expected a number
// in [1, 1000000000000]", "--top: -1 is negative, expected an integer in [1, 1000000]".
// The requests are checked in the library so that every caller (the CLI, Python) gets them.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "keel/core/error.hpp"

namespace keel::perf::detail {

inline std::string real_text(double v) {
  if (v == std::trunc(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

// "[1, 1000000000000]", "(0, 3600]", "> 0", ">= 0".
inline std::string describe_real(double lo, double hi, bool lo_open) {
  if (hi == std::numeric_limits<double>::max()) {
    return fmt::format("{} {}", lo_open ? ">" : ">=", real_text(lo));
  }
  return fmt::format("{}{}, {}]", lo_open ? "(" : "[", real_text(lo), real_text(hi));
}

// Throws keel::invalid_argument unless v is finite and in [lo, hi] ((lo, hi] with lo_open).
inline void check_real(std::string_view option, double v, double lo,
                       double hi = std::numeric_limits<double>::max(), bool lo_open = false) {
  const std::string range = describe_real(lo, hi, lo_open);
  const std::string expected =
      range[0] == '[' || range[0] == '(' ? "a number in " + range : "a number " + range;
  if (!std::isfinite(v)) {
    throw invalid_argument(
        fmt::format("{}: {} is not a finite number, expected {}", option, v, expected));
  }
  if (v < lo || v > hi || (lo_open && v == lo)) {
    throw invalid_argument(fmt::format("{}: {} is out of range, expected {}", option, v, expected));
  }
}

// Throws keel::invalid_argument unless v is in [lo, hi].
inline void check_integer(std::string_view option, std::int64_t v, std::int64_t lo,
                          std::int64_t hi) {
  if (v >= lo && v <= hi) return;
  throw invalid_argument(fmt::format("{}: {} is {}, expected an integer in [{}, {}]", option, v,
                                     v < 0 && lo >= 0 ? "negative" : "out of range", lo, hi));
}

}  // namespace keel::perf::detail
