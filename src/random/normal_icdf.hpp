// Internal: cuRAND's inverse-CDF normal (_curand_normal_icdf), which its host generator uses
// for MTGP32's normals: p = x * 2^-32 + 2^-33 in float, with x mirrored to 2^32 - 1 - x
// above 2^31, and z = -sqrt(2) * erfcinvf(2p) with the sign flipped for mirrored x.
//
// libcurand's erfcinvf rounds a double-precision erfcinv to float. keel computes the float
// nearest to erfcinv(y) instead: a table built at first use (from glibc's erf and erfc, by
// Newton's method) gives a starting point, one Halley step on erf/erfc gives the double, and
// the rare doubles within 2^-40 of a rounding boundary between two floats are redone in
// long double. Where libcurand's double is itself that close to a boundary the two can differ;
// the tests compare every float input (see tests/random/normal_icdf_test.cpp).
// Thread-safe; the table is immutable after first use.
#pragma once

#include <cstdint>
#include <numbers>

#include "keel/random/distributions.hpp"

namespace keel::random::detail {

// The float nearest to erfcinv(y), for 0 < y <= 1 (y = 1 gives +0).
float erfcinv_float(float y);

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
