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

#include <cstddef>
#include <cstdint>
#include <numbers>

#include "keel/random/distributions.hpp"

namespace keel::random::detail {

// The float nearest to erfcinv(y), for 0 < y <= 1 (y = 1 gives +0).
float erfcinv_float(float y);
// Its fast path: erfcinv(y) in double from the polynomial table, relative error about 1e-16;
// NaN for y < 2^-32, which the table does not cover (no 32-bit word gives such a y).
double erfcinv_fast(float y);

// The fast path's table, for the SIMD kernels (normal_icdf_kernels.inc): polynomial `cell`
// has the monomial coefficients erfcinv_coefficients()[cell * k_icdf_terms + k], k = 0..8,
// in u in [-1, 1). Cells below 1/2: (exponent of y + 32) * 16 + the top 4 mantissa bits of y;
// then k_icdf_centre_cells cells of erfinv(a) / a in a^2 (normal_icdf.cpp has the details).
inline constexpr int k_icdf_terms = 9;
inline constexpr int k_icdf_tail_cells = 16;
inline constexpr int k_icdf_centre_cells = 4;
inline constexpr int k_icdf_min_exponent = -32;
inline constexpr int k_icdf_tail_polys = (-1 - k_icdf_min_exponent) * k_icdf_tail_cells;
const double* erfcinv_coefficients();

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

// z[i] = normal_icdf_float(w[i]) for i < n, vectorized at the active SIMD level.
void normal_icdf_floats(const std::uint32_t* w, std::size_t n, float* z);

// The SIMD kernels: they compute a prefix of the batch (a multiple of their width) and return
// its length; normal_icdf_floats does the rest.
namespace simd::avx2 {
std::size_t normal_icdf_floats(const std::uint32_t* w, std::size_t n, float* z);
}
namespace simd::avx512 {
std::size_t normal_icdf_floats(const std::uint32_t* w, std::size_t n, float* z);
}

}  // namespace keel::random::detail
