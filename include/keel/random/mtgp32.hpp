// MTGP32: Saito and Matsumoto's Mersenne Twister for Graphic Processors (Mersenne exponent
// 11213), cuRAND's CURAND_RNG_PSEUDO_MTGP32.
//
// The recursion is x[i+N] = f(x[i], x[i+1], x[i+pos]) over N = 351 words (11213 bits: the
// top 13 bits of x[i] only, by `mask`), output i is x[i+N] tempered with x[i+pos-1]. A block
// of 256 threads computes 256 consecutive words at once ("a round"); that is the same as
// computing them one by one because pos + 255 < N, so no thread reads a word written in its
// own round. The state is cuRAND's: a ring of 1024 words and the index of the oldest word.
//
// What is not defined by a formula is the parameter set (pos, shifts, the 16-entry recursion
// and tempering tables): MTGP's dynamic creator found 200 sets by a random search, and keel
// does not ship them (see keel/random/mtgp32_tables.hpp for where they come from). Every
// function here takes the set as an argument.
//
// Value types and pure constexpr functions, host/device; no shared state.
#pragma once

#include <cstdint>

#include "keel/random/detail/hd.hpp"

namespace keel::random {

inline constexpr int k_mtgp32_mexp = 11213;
inline constexpr int k_mtgp32_n = k_mtgp32_mexp / 32 + 1;  // 351 words of state
inline constexpr int k_mtgp32_ring = 1024;                 // cuRAND's state array
inline constexpr int k_mtgp32_threads = 256;               // words per round of a block
inline constexpr int k_mtgp32_param_sets = 200;
// Only the top 13 bits of x[i] enter the recursion: 32 * N - mexp = 19 low bits are masked off.
inline constexpr std::uint32_t k_mtgp32_mask = ~std::uint32_t{0}
                                               << (32 * k_mtgp32_n - k_mtgp32_mexp);

// One parameter set, as MTGP's dynamic creator prints it (mtgp32_params_fast_t without the
// redundant exponent and the polynomial's digest).
struct mtgp32_params {
  int pos = 0;  // pick-up position, 1 <= pos <= N - 256 (checked by the table loader)
  int sh1 = 0;  // shifts, 0 < sh < 32
  int sh2 = 0;
  std::uint32_t tbl[16] = {};          // recursion matrix, indexed by 4 bits of the output
  std::uint32_t tmp_tbl[16] = {};      // tempering matrix
  std::uint32_t flt_tmp_tbl[16] = {};  // tempering to a float in [1, 2): (tmp >> 9) | 1.0f
  std::uint32_t mask = k_mtgp32_mask;
  constexpr bool operator==(const mtgp32_params&) const = default;
};

struct mtgp32_state {
  std::uint32_t s[k_mtgp32_ring];
  int offset;  // ring index of x[i] for the next output i
};

// The 32-bit seed cuRAND's host generator gives block b (0-based) for a 64-bit seed.
KEEL_HD constexpr std::uint32_t mtgp32_block_seed(std::uint64_t seed, unsigned block) {
  return static_cast<std::uint32_t>(seed ^ (seed >> 32)) + block + 1u;
}

// MTGP's seeding of a block's N words from a 32-bit seed (mtgp32_init_state): an MT19937-like
// linear-congruential fill over a background derived from the parameter set.
KEEL_HD constexpr void mtgp32_init(mtgp32_state& st, const mtgp32_params& p, std::uint32_t seed) {
  const std::uint32_t hidden = p.tbl[4] ^ (p.tbl[8] << 16);
  std::uint32_t fill = hidden;
  fill += fill >> 16;
  fill += fill >> 8;
  const std::uint32_t background = (fill & 0xffu) * 0x01010101u;
  for (int i = 0; i < k_mtgp32_ring; ++i) st.s[i] = i < k_mtgp32_n ? background : 0u;
  st.s[0] = seed;
  st.s[1] = hidden;
  for (int i = 1; i < k_mtgp32_n; ++i)
    st.s[i] ^= 1812433253u * (st.s[i - 1] ^ (st.s[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  st.offset = 0;
}

// The recursion f(x[i], x[i+1], x[i+pos]).
KEEL_HD constexpr std::uint32_t mtgp32_recursion(const mtgp32_params& p, std::uint32_t x1,
                                                 std::uint32_t x2, std::uint32_t y) {
  std::uint32_t x = (x1 & p.mask) ^ x2;
  x ^= x << p.sh1;
  y = x ^ (y >> p.sh2);
  return y ^ p.tbl[y & 0x0fu];
}

// Tempering of a new word v with t = x[i+pos-1]: the 32-bit output.
KEEL_HD constexpr std::uint32_t mtgp32_temper(const mtgp32_params& p, std::uint32_t v,
                                              std::uint32_t t) {
  t ^= t >> 16;
  t ^= t >> 8;
  return v ^ p.tmp_tbl[t & 0x0fu];
}

// Tempering to the bits of a float in [1, 2) (MTGP's single-precision output).
KEEL_HD constexpr std::uint32_t mtgp32_temper_float_bits(const mtgp32_params& p, std::uint32_t v,
                                                         std::uint32_t t) {
  t ^= t >> 16;
  t ^= t >> 8;
  return (v >> 9) ^ p.flt_tmp_tbl[t & 0x0fu];
}

// One round of a block: the next 256 outputs of its sequence, as cuRAND's 256 threads
// compute them in one curand() call.
KEEL_HD constexpr void mtgp32_round(mtgp32_state& st, const mtgp32_params& p, std::uint32_t* out) {
  constexpr int k_mask = k_mtgp32_ring - 1;
  const int o = st.offset;
  for (int t = 0; t < k_mtgp32_threads; ++t) {
    const std::uint32_t r = mtgp32_recursion(p, st.s[(o + t) & k_mask], st.s[(o + t + 1) & k_mask],
                                             st.s[(o + t + p.pos) & k_mask]);
    st.s[(o + t + k_mtgp32_n) & k_mask] = r;
    out[t] = mtgp32_temper(p, r, st.s[(o + t + p.pos - 1) & k_mask]);
  }
  st.offset = (o + k_mtgp32_threads) & k_mask;
}

}  // namespace keel::random
