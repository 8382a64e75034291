// Internal: cuRAND's inverse-CDF normals (_curand_normal_icdf and its double version), which
// its host generator uses for MT19937's, MTGP32's and Sobol's normals: p = x * 2^-32 + 2^-33
// (in float for floats, exact in double for doubles), with x mirrored to 2^32 - 1 - x above
// 2^31, and z = -sqrt(2) * erfcinv(2p) with the sign flipped for mirrored x.
//
// libcurand's erfcinvf rounds a double-precision erfcinv to float. keel computes the float
// nearest to erfcinv(y) instead: piecewise polynomials, fitted at first use to values solved
// from glibc's erf and erfc (nothing copied), give a double with a relative error near 1e-16;
// the rare ones within 2^-42 of a rounding boundary between two floats are refined in long
// double. The two agree wherever libcurand's double is not itself that close to a boundary:
// for all 71,303,169 floats 2p that 32-bit words give, they were found equal when this was
// written; the tests check a sweep against long double and 2^24 values against libcurand.
//
// Doubles are libcurand's double erfcinv itself, the CUDA math library's algorithm, with the
// coefficients of Blair, Edwards and Johnson's Tables 18, 39 and 59 that keel reads at run
// time (keel/random/erfcinv_tables.hpp):
//   erfcinv(a) = erfinv(1 - a)                            for a >= 0.0625,
//              = P59(t) / (t Q59(t)), t = 1/sqrt(-log a)    for 1e-100 <= a < 0.0625;
//   erfinv(x)  = x P18(t) / Q18(t),  t = x^2 - 0.5625        for |x| < 0.75,
//              = x P39(t) / Q39(t),  t = x^2 - 0.87890625    for 0.75 <= |x| < 0.9375,
//              = +-P59(t) / (t Q59(t)), t = 1/sqrt(-log1p(-|x|)) for 0.9375 <= |x| < 1,
// by Horner's rule with separately rounded operations and glibc's log, log1p and sqrt
// (keel_random is compiled with -ffp-contract=off: a fused multiply-add changes the bits).
// Every input keel passes is at least 2^-32, so the tables below 1e-100 are not needed.
// Without the coefficients, keel's own erfcinv (Halley's method on glibc's erfc in long double,
// rounded) stands in: within half an ulp on the tests' sweep, libcurand's within 7, so the two
// differ in about half the values.
// Thread-safe; the tables are immutable after first use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numbers>

#include "keel/random/distributions.hpp"

namespace keel::random {
struct erfcinv_tables;
}

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

struct request;
// MT19937's and Sobol's inverse-CDF distributions of the words w[0..n), into r.out from
// index `at`: normal z * sd + mean (in float for floats) and log-normal exp of it, the floats
// from normal_icdf_floats, the doubles from normal_icdf_doubles. False (nothing written) for
// any other kind.
bool normal_icdf_distribution(const request& r, const std::uint32_t* w, std::size_t n,
                              std::size_t at);

// Blair et al.'s polynomials for Horner's rule: coefficient k of t^k at [k], padded with zeros
// above the degree and with the monic denominators' leading 1 written out (0 t + 0, 0 t + c
// and 1 t + c are exact, so the sums are those of the unpadded polynomials).
struct blair_coefficients {
  double p18[9], q18[9], p39[9], q39[9], p59[11], q59[11];
};
blair_coefficients blair_from(const erfcinv_tables& t);
// libcurand's erfcinv(a) with coefficients b, for 1e-100 <= a < 2.
double erfcinv_blair(const blair_coefficients& b, double a);
// keel's own erfcinv(a), 0 < a < 2, within about half an ulp.
double erfcinv_keel(double a);
// The coefficients of erfcinv_default_tables(), or null when there are none.
const blair_coefficients* curand_erfcinv();
// erfcinv_blair with curand_erfcinv() when there are coefficients, else erfcinv_keel.
double erfcinv_double(double a);

// cuRAND's double inverse-CDF normal of a 32-bit word.
inline double normal_icdf_double(std::uint32_t x) {
  double s = -std::numbers::sqrt2;
  if (x > 0x80000000u) {
    x = ~x;
    s = -s;
  }
  return s * erfcinv_double(2.0 * uniform_double_32_mid(x));
}

// z[i] = normal_icdf_double(w[i]) for i < n, vectorized at the active SIMD level when the
// coefficients are libcurand's.
void normal_icdf_doubles(const std::uint32_t* w, std::size_t n, double* z);

// The SIMD kernels: they compute a prefix of the batch (a multiple of their width) and return
// its length; normal_icdf_floats and normal_icdf_doubles do the rest.
#define KEEL_ICDF_SIMD_DECLS                                                           \
  std::size_t normal_icdf_floats(const std::uint32_t* w, std::size_t n, float* z);     \
  std::size_t normal_icdf_doubles(const blair_coefficients& b, const std::uint32_t* w, \
                                  std::size_t n, double* z);
namespace simd::avx2 {
KEEL_ICDF_SIMD_DECLS
}
namespace simd::avx512 {
KEEL_ICDF_SIMD_DECLS
}
#undef KEEL_ICDF_SIMD_DECLS

}  // namespace keel::random::detail
