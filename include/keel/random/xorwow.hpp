// XORWOW (Marsaglia's xorshift with a Weyl sequence), cuRAND's CURAND_RNG_PSEUDO_XORWOW.
//
// xorwow_state is a small value type (no sharing, no locking). The step and the seeding are
// constexpr and host/device. Skip-ahead uses the 160x160 GF(2) transition matrix raised to
// powers of two; xorwow_jumps() builds those from the step function itself (no copied
// tables) on first use, thread-safely (a function-local static), and they are immutable.
// Subsequences are 2^67 steps apart, as in cuRAND.
#pragma once

#include <array>
#include <cstdint>

#include "keel/random/detail/gf2_matrix.hpp"
#include "keel/random/detail/hd.hpp"

namespace keel::random {

inline constexpr std::uint32_t k_xorwow_weyl = 362437u;
inline constexpr int k_xorwow_subsequence_log2 = 67;

struct xorwow_state {
  std::uint32_t v[5];
  std::uint32_t d;
  constexpr bool operator==(const xorwow_state&) const = default;
};

// One step: advances the state and returns the next 32-bit output.
KEEL_HD constexpr std::uint32_t xorwow_next(xorwow_state& s) {
  const std::uint32_t t = s.v[0] ^ (s.v[0] >> 2);
  s.v[0] = s.v[1];
  s.v[1] = s.v[2];
  s.v[2] = s.v[3];
  s.v[3] = s.v[4];
  s.v[4] = (s.v[4] ^ (s.v[4] << 4)) ^ (t ^ (t << 1));
  s.d += k_xorwow_weyl;
  return s.v[4] + s.d;
}

// cuRAND's seeding of the state from a 64-bit seed (before any skip-ahead).
KEEL_HD constexpr xorwow_state xorwow_seed(std::uint64_t seed) {
  const std::uint32_t s0 = static_cast<std::uint32_t>(seed) ^ 0xaad26b49u;
  const std::uint32_t s1 = static_cast<std::uint32_t>(seed >> 32) ^ 0xf7dcefddu;
  const std::uint32_t t0 = 1099087573u * s0;
  const std::uint32_t t1 = 2591861531u * s1;
  return xorwow_state{
      {123456789u + t0, 362436069u ^ t0, 521288629u + t1, 88675123u ^ t1, 5783321u + t0},
      6615241u + t1 + t0};
}

namespace detail {
using xorwow_matrix = gf2_matrix<5>;

constexpr xorwow_matrix::vector xorwow_linear_step(xorwow_matrix::vector v) {
  xorwow_state s{{v[0], v[1], v[2], v[3], v[4]}, 0};
  xorwow_next(s);
  return {s.v[0], s.v[1], s.v[2], s.v[3], s.v[4]};
}
}  // namespace detail

// jump[k] = A^(2^k) for the linear part A of one step, k = 0 .. k_count-1
// (enough for a 64-bit offset and a 64-bit subsequence index 2^67 apart).
struct xorwow_jump_table {
  static constexpr int k_count = k_xorwow_subsequence_log2 + 64;
  std::array<detail::xorwow_matrix, k_count> jump;
};

// Built on first use, at run time (src/random/engines/xorwow.cpp: built by a lambda in a
// header, GCC first tried the whole table as a constant expression in every translation unit
// that included it, 18 s and 1.2 GB each).
const xorwow_jump_table& xorwow_jumps();

namespace detail {
inline void xorwow_apply(xorwow_state& s, const xorwow_matrix& m) {
  const auto r = m.apply({s.v[0], s.v[1], s.v[2], s.v[3], s.v[4]});
  for (int i = 0; i < 5; ++i) s.v[i] = r[i];
}
}  // namespace detail

// Advances the state by n steps (as n calls of xorwow_next), in O(log n) matrix products.
inline void xorwow_skipahead(xorwow_state& s, std::uint64_t n) {
  const auto& t = xorwow_jumps();
  s.d += static_cast<std::uint32_t>(n) * k_xorwow_weyl;
  for (int k = 0; n != 0; ++k, n >>= 1)
    if (n & 1) detail::xorwow_apply(s, t.jump[k]);
}

// Advances the state by n subsequences (n * 2^67 steps). The Weyl word is unchanged because
// 2^67 * 362437 is 0 modulo 2^32.
inline void xorwow_skipahead_sequence(xorwow_state& s, std::uint64_t n) {
  const auto& t = xorwow_jumps();
  for (int k = k_xorwow_subsequence_log2; n != 0; ++k, n >>= 1)
    if (n & 1) detail::xorwow_apply(s, t.jump[k]);
}

// The state curand_init(seed, subsequence, offset, &state) produces.
inline xorwow_state xorwow_init(std::uint64_t seed, std::uint64_t subsequence,
                                std::uint64_t offset) {
  xorwow_state s = xorwow_seed(seed);
  xorwow_skipahead_sequence(s, subsequence);
  xorwow_skipahead(s, offset);
  return s;
}

}  // namespace keel::random
