// Sobol' sequences in 32 bits, as cuRAND's CURAND_RNG_QUASI_SOBOL32 and
// CURAND_RNG_QUASI_SCRAMBLED_SOBOL32 generate them: the core, header-only and constexpr.
//
// One dimension of the sequence is given by its 32 direction vectors v[0..31] (v[b] is used
// when bit b of the Gray code of the point index changes) and, when scrambled, by a 32-bit
// digital shift. Point n is shift ^ XOR of v[b] over the set bits b of gray(n) = n ^ (n >> 1)
// (sobol32_point: a jump to any index in 32 steps); point n + 1 follows from point n by one
// XOR (sobol32_next: the Gray-code update). Indices are taken mod 2^32, as cuRAND does.
// sobol32_directions_from() builds the direction vectors from a primitive polynomial and its
// initial m values by the Sobol' recurrence (Bratley & Fox, ACM TOMS 14 (1988) 88-100; Joe &
// Kuo's tables use the same convention); keel/random/sobol_tables.hpp has the tables.
//
// Everything here is a pure function of its arguments on value types: thread-safe, no
// ownership, callable from host and CUDA device code.
#pragma once

#include <bit>
#include <cstdint>

#include "keel/random/detail/hd.hpp"

namespace keel::random {

inline constexpr int k_sobol32_bits = 32;
// The dimensions cuRAND's 32-bit Sobol' generators accept
// (curandSetQuasiRandomGeneratorDimensions).
inline constexpr std::uint32_t k_sobol32_max_dimensions = 20000;

struct sobol32_directions {
  std::uint32_t v[k_sobol32_bits];
  constexpr bool operator==(const sobol32_directions&) const = default;
};

KEEL_HD constexpr std::uint32_t sobol_gray(std::uint32_t n) { return n ^ (n >> 1); }

// Point n of one dimension: shift ^ XOR of d.v[b] for the set bits b of gray(n).
KEEL_HD constexpr std::uint32_t sobol32_point(const sobol32_directions& d, std::uint32_t n,
                                              std::uint32_t shift = 0) {
  std::uint32_t x = shift;
  for (std::uint32_t g = sobol_gray(n); g != 0; g &= g - 1) x ^= d.v[std::countr_zero(g)];
  return x;
}

// The Gray-code update: given x = point n, returns point n + 1 (mod 2^32). gray(n) and
// gray(n + 1) differ in the lowest set bit of n + 1 (bit 31 when n + 1 wraps to 0).
KEEL_HD constexpr std::uint32_t sobol32_next(const sobol32_directions& d, std::uint32_t n,
                                             std::uint32_t x) {
  return x ^ d.v[std::countr_zero((n + 1) | 0x80000000u)];
}

// Dimension 1: the van der Corput sequence (every m_k = 1, v[b] = 2^(31 - b)).
KEEL_HD constexpr sobol32_directions sobol32_van_der_corput() {
  sobol32_directions d{};
  for (int b = 0; b < k_sobol32_bits; ++b) d.v[b] = 0x80000000u >> b;
  return d;
}

// The direction vectors of the dimension whose primitive polynomial of degree s (1 <= s < 32) is
// x^s + a_1 x^(s-1) + ... + a_(s-1) x + 1, with a = (a_1 ... a_(s-1)) read as a binary number
// (a_1 the most significant bit), and initial values m[0..s-1] = m_1..m_s (m_k odd, < 2^k):
// v[k-1] = m_k 2^(32-k), and for k > s, v[k-1] = v[k-1-s] ^ (v[k-1-s] >> s) ^ XOR over
// j = 1..s-1 of a_j v[k-1-j].
KEEL_HD constexpr sobol32_directions sobol32_directions_from(unsigned s, std::uint32_t a,
                                                             const std::uint32_t* m) {
  sobol32_directions d{};
  for (unsigned k = 0; k < s && k < 32; ++k) d.v[k] = m[k] << (31 - k);
  for (unsigned k = s; k < 32; ++k) {
    std::uint32_t v = d.v[k - s] ^ (d.v[k - s] >> s);
    for (unsigned j = 1; j < s; ++j)
      if ((a >> (s - 1 - j)) & 1u) v ^= d.v[k - j];
    d.v[k] = v;
  }
  return d;
}

}  // namespace keel::random
