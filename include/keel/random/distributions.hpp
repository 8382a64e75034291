// cuRAND's conversions from raw 32-bit words to floating-point samples, as scalar constexpr
// host/device functions. They are what libcurand's host generator computes; Box-Muller is
// parameterised by the math functions so that the host (glibc's logf/sincosf, which is what
// libcurand's host output is made of) and device (CUDA's) variants share one definition.
#pragma once

#include <cstdint>

#include "keel/random/detail/hd.hpp"

namespace keel::random {

inline constexpr float k_2pow32_inv = 2.3283064e-10f;
inline constexpr float k_2pow32_inv_2pi = 2.3283064e-10f * 6.2831855f;
inline constexpr double k_2pow53_inv = 1.1102230246251565e-16;
inline constexpr double k_pi_double = 3.1415926535897932;

// Uniform float in (0, 1]: x * 2^-32 + 2^-33 in float (two roundings; can reach 1.0f).
KEEL_HD constexpr float uniform_float(std::uint32_t x) {
  return static_cast<float>(x) * k_2pow32_inv + k_2pow32_inv / 2.0f;
}

// Uniform double in (0, 1) from one word: x * 2^-32 + 2^-33, exact in double (MT19937's
// uniform double; rounded to float, its uniform float).
KEEL_HD constexpr double uniform_double_32_mid(std::uint32_t x) {
  return static_cast<double>(x) * 0x1p-32 + 0x1p-33;
}

// Uniform double in (0, 1) from two words: 53 bits z = x ^ (y << 21).
KEEL_HD constexpr double uniform_double(std::uint32_t x, std::uint32_t y) {
  const std::uint64_t z = std::uint64_t{x} ^ (std::uint64_t{y} << 21);
  return static_cast<double>(z) * k_2pow53_inv + k_2pow53_inv / 2.0;
}

// Uniform double in (0, 1] from one word, as cuRAND's MTGP32 and Sobol' give it:
// x * 2^-32 + 2^-32.
KEEL_HD constexpr double uniform_double_32(std::uint32_t x) {
  return static_cast<double>(x) * 0x1p-32 + 0x1p-32;
}

// Box-Muller arguments: u in (0, 1] and the angle v in (0, 2pi).
KEEL_HD constexpr float box_muller_u(std::uint32_t x) { return uniform_float(x); }
KEEL_HD constexpr float box_muller_v(std::uint32_t y) {
  return static_cast<float>(y) * k_2pow32_inv_2pi + k_2pow32_inv_2pi / 2.0f;
}

struct float_pair {
  float x, y;
};
struct double_pair {
  double x, y;
};

// One Box-Muller pair from words (x, y): {sin(v) * s, cos(v) * s}, s = sqrt(-2 log u).
// `M` provides logf, sincosf and sqrtf.
template <class M>
KEEL_HD float_pair box_muller(std::uint32_t x, std::uint32_t y) {
  const float u = box_muller_u(x);
  const float v = box_muller_v(y);
  const float s = M::sqrtf(-2.0f * M::logf(u));
  float sv, cv;
  M::sincosf(v, &sv, &cv);
  return {sv * s, cv * s};
}

// The angle of the double Box-Muller, pi * v with v in (0, 2] from (y0, y1).
KEEL_HD constexpr double box_muller_angle(std::uint32_t y0, std::uint32_t y1) {
  const std::uint64_t zy = std::uint64_t{y0} ^ (std::uint64_t{y1} << 21);
  const double v = static_cast<double>(zy) * (k_2pow53_inv * 2.0) + k_2pow53_inv;
  return v * k_pi_double;
}

// Double Box-Muller from four words: u from (x0, x1), the angle from (y0, y1).
template <class M>
KEEL_HD double_pair box_muller_double(std::uint32_t x0, std::uint32_t x1, std::uint32_t y0,
                                      std::uint32_t y1) {
  const double u = uniform_double(x0, x1), a = box_muller_angle(y0, y1);
  const double s = M::sqrt(-2.0 * M::log(u));
  return {M::sin(a) * s, M::cos(a) * s};
}

inline constexpr double k_2pow32_inv_double = 2.3283064365386963e-10;

}  // namespace keel::random
