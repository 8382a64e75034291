// Internal: cuRAND's double-precision Box-Muller (box_muller_double<glibc_math>) on many pairs
// at once, vectorized at the active SIMD level with the scalar function's bits.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "engine.hpp"

namespace keel::random::detail {

// For pair j < pairs, words w[4j .. 4j + 3] = (x0, x1, y0, y1):
// {z[2j], z[2j + 1]} = box_muller_double<glibc_math>(x0, x1, y0, y1).
void box_muller_doubles(const std::uint32_t* w, std::size_t pairs, double* z);

// The vector kernels take their double-double's leading part as glibc's result where the
// rest is below this many ulps of it: right whenever glibc's log, sin and cos are within
// 1 - 0.45 - (the double-double's own error, 0.003) ulps of the true value. glibc 2.36 states
// 0.519 for log; tests/random/box_muller_double_test.cpp measures all three.
inline constexpr double k_box_muller_safe_ulps = 0.45;

// What request r (normal_double or log_normal_double) makes of a standard normal z:
// z stddev + mean, or exp(mean + stddev z).
inline double double_normal_output(const request& r, double z) {
  return r.what == kind::normal_double ? z * r.stddev + r.mean : ::exp(r.mean + r.stddev * z);
}

// The SIMD kernels: they compute a prefix of the batch (a multiple of their width) and return
// its length; box_muller_doubles does the rest.
namespace simd::avx2 {
std::size_t box_muller_doubles(const std::uint32_t* w, std::size_t pairs, double* z);
}
namespace simd::avx512 {
std::size_t box_muller_doubles(const std::uint32_t* w, std::size_t pairs, double* z);
}

}  // namespace keel::random::detail
