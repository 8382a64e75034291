// MRG32k3a (L'Ecuyer's combined multiple recursive generator), cuRAND's
// CURAND_RNG_PSEUDO_MRG32K3A.
//
// mrg32k3a_state is a small value type. Step, seeding and skip-ahead are constexpr and
// host/device: skip-ahead raises the two 3x3 transition matrices to the needed power modulo
// m1 and m2 by repeated squaring, computed from the recurrence itself (no copied tables).
// Subsequences are 2^76 steps apart, as in cuRAND.
#pragma once

#include <cstdint>

#include "keel/random/detail/hd.hpp"

namespace keel::random {

inline constexpr std::uint64_t k_mrg_m1 = 4294967087u;
inline constexpr std::uint64_t k_mrg_m2 = 4294944443u;
inline constexpr std::uint64_t k_mrg_a12 = 1403580u;
inline constexpr std::uint64_t k_mrg_a13n = 810728u;
inline constexpr std::uint64_t k_mrg_a21 = 527612u;
inline constexpr std::uint64_t k_mrg_a23n = 1370589u;
inline constexpr int k_mrg_subsequence_log2 = 76;
// cuRAND's scalings of the combined output r in [1, m1].
inline constexpr double k_mrg_norm = 2.3283065498378288e-10;  // uniform float / double
inline constexpr double k_mrg_bits_norm = 1.000000048662;     // raw 32-bit output

struct mrg32k3a_state {
  std::uint32_t s1[3];
  std::uint32_t s2[3];
  constexpr bool operator==(const mrg32k3a_state&) const = default;
};

// One step: returns the combined value r in [1, m1] (r = m1 when the components are equal).
KEEL_HD constexpr std::uint32_t mrg32k3a_next(mrg32k3a_state& s) {
  // Both products are below 2^53, so the differences are exact in 64-bit signed integers.
  std::int64_t p1 = static_cast<std::int64_t>(k_mrg_a12 * s.s1[1]) -
                    static_cast<std::int64_t>(k_mrg_a13n * s.s1[0]);
  p1 %= static_cast<std::int64_t>(k_mrg_m1);
  if (p1 < 0) p1 += static_cast<std::int64_t>(k_mrg_m1);
  s.s1[0] = s.s1[1];
  s.s1[1] = s.s1[2];
  s.s1[2] = static_cast<std::uint32_t>(p1);
  std::int64_t p2 = static_cast<std::int64_t>(k_mrg_a21 * s.s2[2]) -
                    static_cast<std::int64_t>(k_mrg_a23n * s.s2[0]);
  p2 %= static_cast<std::int64_t>(k_mrg_m2);
  if (p2 < 0) p2 += static_cast<std::int64_t>(k_mrg_m2);
  s.s2[0] = s.s2[1];
  s.s2[1] = s.s2[2];
  s.s2[2] = static_cast<std::uint32_t>(p2);
  return static_cast<std::uint32_t>(p1 > p2 ? p1 - p2
                                            : p1 - p2 + static_cast<std::int64_t>(k_mrg_m1));
}

// cuRAND's raw 32-bit output and float uniform from a combined value r.
KEEL_HD constexpr std::uint32_t mrg32k3a_bits(std::uint32_t r) {
  return static_cast<std::uint32_t>(static_cast<double>(r) * k_mrg_bits_norm);
}
KEEL_HD constexpr float mrg32k3a_uniform(std::uint32_t r) {
  return static_cast<float>(static_cast<double>(r) * k_mrg_norm);
}
KEEL_HD constexpr double mrg32k3a_uniform_double(std::uint32_t r) {
  return static_cast<double>(r) * k_mrg_norm;
}

// cuRAND's seeding of the state from a 64-bit seed (before any skip-ahead).
KEEL_HD constexpr mrg32k3a_state mrg32k3a_seed(std::uint64_t seed) {
  if (seed == 0) return mrg32k3a_state{{12345, 12345, 12345}, {12345, 12345, 12345}};
  const std::uint64_t x1 = (static_cast<std::uint32_t>(seed) ^ 0x55555555u);
  const std::uint64_t x2 = (static_cast<std::uint32_t>(seed >> 32) ^ 0xAAAAAAAAu);
  return mrg32k3a_state{{static_cast<std::uint32_t>(x1 * 12345 % k_mrg_m1),
                         static_cast<std::uint32_t>(x2 * 12345 % k_mrg_m1),
                         static_cast<std::uint32_t>(x1 * 12345 % k_mrg_m1)},
                        {static_cast<std::uint32_t>(x2 * 12345 % k_mrg_m2),
                         static_cast<std::uint32_t>(x1 * 12345 % k_mrg_m2),
                         static_cast<std::uint32_t>(x2 * 12345 % k_mrg_m2)}};
}

// A 3x3 matrix modulo m, acting on one component's state (s[0], s[1], s[2]).
struct mrg_matrix {
  std::uint64_t a[3][3];
  std::uint64_t m;

  KEEL_HD static constexpr std::uint64_t mulmod(std::uint64_t x, std::uint64_t y, std::uint64_t m) {
    // x, y < m < 2^32: the product fits in 64 bits.
    return x * y % m;
  }
  KEEL_HD constexpr mrg_matrix operator*(const mrg_matrix& o) const {
    mrg_matrix r{{}, m};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        std::uint64_t acc = 0;
        for (int k = 0; k < 3; ++k) acc = (acc + mulmod(a[i][k], o.a[k][j], m)) % m;
        r.a[i][j] = acc;
      }
    return r;
  }
  KEEL_HD constexpr void apply(std::uint32_t s[3]) const {
    std::uint64_t r[3];
    for (int i = 0; i < 3; ++i) {
      std::uint64_t acc = 0;
      for (int k = 0; k < 3; ++k) acc = (acc + mulmod(a[i][k], s[k], m)) % m;
      r[i] = acc;
    }
    for (int i = 0; i < 3; ++i) s[i] = static_cast<std::uint32_t>(r[i]);
  }
  KEEL_HD static constexpr mrg_matrix identity(std::uint64_t m) {
    return mrg_matrix{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, m};
  }
  // this^(2^e * n).
  KEEL_HD constexpr mrg_matrix pow2_times(int e, std::uint64_t n) const {
    mrg_matrix base = *this;
    for (int i = 0; i < e; ++i) base = base * base;
    mrg_matrix r = identity(m);
    for (; n != 0; n >>= 1, base = base * base)
      if (n & 1) r = r * base;
    return r;
  }
};

// The one-step transition matrices of the two components.
inline constexpr mrg_matrix k_mrg_a1{{{0, 1, 0}, {0, 0, 1}, {k_mrg_m1 - k_mrg_a13n, k_mrg_a12, 0}},
                                     k_mrg_m1};
inline constexpr mrg_matrix k_mrg_a2{{{0, 1, 0}, {0, 0, 1}, {k_mrg_m2 - k_mrg_a23n, 0, k_mrg_a21}},
                                     k_mrg_m2};

// Advances by n steps.
KEEL_HD constexpr void mrg32k3a_skipahead(mrg32k3a_state& s, std::uint64_t n) {
  k_mrg_a1.pow2_times(0, n).apply(s.s1);
  k_mrg_a2.pow2_times(0, n).apply(s.s2);
}
// Advances by n subsequences (n * 2^76 steps).
KEEL_HD constexpr void mrg32k3a_skipahead_sequence(mrg32k3a_state& s, std::uint64_t n) {
  k_mrg_a1.pow2_times(k_mrg_subsequence_log2, n).apply(s.s1);
  k_mrg_a2.pow2_times(k_mrg_subsequence_log2, n).apply(s.s2);
}

// The state curand_init(seed, subsequence, offset, &state) produces.
KEEL_HD constexpr mrg32k3a_state mrg32k3a_init(std::uint64_t seed, std::uint64_t subsequence,
                                               std::uint64_t offset) {
  mrg32k3a_state s = mrg32k3a_seed(seed);
  mrg32k3a_skipahead_sequence(s, subsequence);
  mrg32k3a_skipahead(s, offset);
  return s;
}

}  // namespace keel::random
