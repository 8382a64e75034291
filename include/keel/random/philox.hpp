// Philox4x32-10: the counter-based generator of Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3" (SC'11), as used by cuRAND's CURAND_RNG_PSEUDO_PHILOX4_32_10.
//
// philox4x32_10(ctr, key) is a pure, stateless, constexpr function: the same (counter, key)
// always gives the same four words, on host and device. There is no state to share, so it is
// trivially thread-safe; parallel streams are disjoint counter ranges under one key.
// Known answer (Random123 kat_vectors): ctr 0, key 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
#pragma once

#include <cstdint>

#include "keel/random/detail/hd.hpp"

namespace keel::random {

struct philox_ctr {
  std::uint32_t v[4];
  constexpr bool operator==(const philox_ctr&) const = default;
};
struct philox_key {
  std::uint32_t v[2];
  constexpr bool operator==(const philox_key&) const = default;
};

inline constexpr std::uint32_t k_philox_m0 = 0xD2511F53u;
inline constexpr std::uint32_t k_philox_m1 = 0xCD9E8D57u;
inline constexpr std::uint32_t k_philox_w0 = 0x9E3779B9u;
inline constexpr std::uint32_t k_philox_w1 = 0xBB67AE85u;

namespace detail {
KEEL_HD constexpr philox_ctr philox_round(philox_ctr c, philox_key k) {
  const std::uint64_t p0 = std::uint64_t{k_philox_m0} * c.v[0];
  const std::uint64_t p1 = std::uint64_t{k_philox_m1} * c.v[2];
  return philox_ctr{
      {static_cast<std::uint32_t>(p1 >> 32) ^ c.v[1] ^ k.v[0], static_cast<std::uint32_t>(p1),
       static_cast<std::uint32_t>(p0 >> 32) ^ c.v[3] ^ k.v[1], static_cast<std::uint32_t>(p0)}};
}
}  // namespace detail

// Ten rounds of Philox4x32 with the Weyl key schedule.
KEEL_HD constexpr philox_ctr philox4x32_10(philox_ctr ctr, philox_key key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.v[0] += k_philox_w0;
      key.v[1] += k_philox_w1;
    }
    ctr = detail::philox_round(ctr, key);
  }
  return ctr;
}

// The key cuRAND derives from a 64-bit seed: (low 32 bits, high 32 bits).
KEEL_HD constexpr philox_key philox_key_from_seed(std::uint64_t seed) {
  return philox_key{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
}

// The counter of cuRAND's host generator for block j of "thread" t:
// {lo32(j), hi32(j), lo32(t), hi32(t)}.
KEEL_HD constexpr philox_ctr philox_ctr_of(std::uint64_t block, std::uint64_t thread) {
  return philox_ctr{{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                     static_cast<std::uint32_t>(thread), static_cast<std::uint32_t>(thread >> 32)}};
}

}  // namespace keel::random
