// Internal: cuRAND's inverse-CDF normal (_curand_normal_icdf), which its host generator uses
// for MTGP32's normals: p = x * 2^-32 + 2^-33 in float, with x mirrored to 2^32 - 1 - x
// above 2^31, and z = -sqrt(2) * erfcinvf(2p) with the sign flipped for mirrored x.
//
// libcurand's erfcinvf rounds a double-precision erfcinv to float. keel computes the float
// nearest to erfcinv(y) instead: piecewise polynomials, fitted at first use to values solved
// from glibc's erf and erfc (nothing copied), give a double with a relative error near 1e-16;
// the rare ones within 2^-42 of a rounding boundary between two floats are refined in long
// double. The two agree wherever libcurand's double is not itself that close to a boundary:
// for all 71,303,169 floats 2p that 32-bit words give, they were found equal when this was
// written; the tests check a sweep against long double and 2^24 values against libcurand.
// Thread-safe; the table is immutable after first use.
#pragma once

#include <cstdint>
#include <numbers>

#include "keel/random/distributions.hpp"

namespace keel::random::detail {

// The float nearest to erfcinv(y), for 0 < y <= 1 (y = 1 gives +0).
float erfcinv_float(float y);
// Its fast path: erfcinv(y) in double from the polynomial table, relative error about 1e-16;
// NaN for y < 2^-32, which the table does not cover (no 32-bit word gives such a y).
double erfcinv_fast(float y);

// cuRAND's _curand_normal_icdf(x): a standard normal float from a 32-bit word.
inline float normal_icdf_float(std::uint32_t x) {
  float s = -std::numbers::sqrt2_v<float>;
  if (x > 0x80000000u) {
    x = 0xffffffffu - x;
    s = -s;
  }
  const float p = uniform_float(x);
  return s * erfcinv_float(2.0f * p);
}

}  // namespace keel::random::detail
