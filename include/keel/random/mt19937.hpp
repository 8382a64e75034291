// MT19937 (Matsumoto and Nishimura's Mersenne Twister, the standard 32-bit parameters), cuRAND's
// CURAND_RNG_PSEUDO_MT19937 and std::mt19937.
//
// mt19937_state is a plain value type (624 words and the index of the oldest one; no sharing, no
// locking). Seeding, the one-word step and tempering are constexpr and host/device; the first
// output of mt19937_seed(s) equals std::mt19937(s)'s. Skip-ahead is polynomial arithmetic over
// GF(2): a jump of J steps applies q(A) = A^J to the state, q = x^J mod P, where P is the
// characteristic polynomial of the step A. keel computes P itself, by Berlekamp-Massey on the
// generator's own output bits (no copied tables), once per process on first use (thread-safe
// function-local statics, immutable afterwards), and the jump polynomials from it by repeated
// squaring. Subsequences are 2^2048 steps apart: cuRAND's host generator starts its 8192
// generators that far apart (measured; see docs/random.md).
//
// A jump is exact on every reachable state (one produced by at least one step). On a freshly
// seeded state it is exact in the 19937 bits that determine the stream; the 31 low bits of the
// oldest word, which no output depends on, are then left unspecified.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "keel/random/detail/hd.hpp"

namespace keel::random {

inline constexpr int k_mt19937_n = 624;
inline constexpr int k_mt19937_m = 397;
inline constexpr int k_mt19937_mexp = 19937;  // state bits; the degree of P
inline constexpr std::uint32_t k_mt19937_matrix_a = 0x9908b0dfu;
inline constexpr std::uint32_t k_mt19937_upper = 0x80000000u;
inline constexpr int k_mt19937_subsequence_log2 = 2048;

struct mt19937_state {
  std::uint32_t x[k_mt19937_n];  // x[i] is the oldest word; x[(i + k) % n] the k-th after it
  std::uint32_t i;
  // The same window of the sequence (wherever it starts in x).
  KEEL_HD constexpr bool operator==(const mt19937_state& o) const {
    for (std::uint32_t k = 0; k < k_mt19937_n; ++k)
      if (x[(i + k) % k_mt19937_n] != o.x[(o.i + k) % k_mt19937_n]) return false;
    return true;
  }
};

// The new word of the recurrence from the oldest word a, the next one b and the word c that
// is m after a.
KEEL_HD constexpr std::uint32_t mt19937_twist(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  const std::uint32_t y = (a & k_mt19937_upper) | (b & ~k_mt19937_upper);
  return c ^ (y >> 1) ^ ((y & 1u) ? k_mt19937_matrix_a : 0u);
}

KEEL_HD constexpr std::uint32_t mt19937_temper(std::uint32_t y) {
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

// One step of the recurrence: replaces the oldest word by the new one and returns it untempered.
KEEL_HD constexpr std::uint32_t mt19937_step(mt19937_state& s) {
  const std::uint32_t i = s.i;
  const std::uint32_t i1 = i + 1 == k_mt19937_n ? 0 : i + 1;
  const std::uint32_t im =
      i + k_mt19937_m < k_mt19937_n ? i + k_mt19937_m : i + k_mt19937_m - k_mt19937_n;
  const std::uint32_t w = mt19937_twist(s.x[i], s.x[i1], s.x[im]);
  s.x[i] = w;
  s.i = i1;
  return w;
}

// The next 32-bit output (as std::mt19937's operator()).
KEEL_HD constexpr std::uint32_t mt19937_next(mt19937_state& s) {
  return mt19937_temper(mt19937_step(s));
}

// std::mt19937's seeding (Knuth's multiplier 1812433253).
KEEL_HD constexpr mt19937_state mt19937_seed(std::uint32_t seed) {
  mt19937_state s{};
  s.x[0] = seed;
  for (std::uint32_t k = 1; k < k_mt19937_n; ++k)
    s.x[k] = 1812433253u * (s.x[k - 1] ^ (s.x[k - 1] >> 30)) + k;
  s.i = 0;
  return s;
}

// A polynomial over GF(2) of degree <= 19937: coefficient k is bit k % 64 of w[k / 64].
struct mt19937_poly {
  static constexpr int k_words = (k_mt19937_mexp + 64) / 64;  // 312
  std::uint64_t w[k_words];
  KEEL_HD constexpr bool coef(int k) const { return (w[k >> 6] >> (k & 63)) & 1u; }
  constexpr bool operator==(const mt19937_poly&) const = default;
};

namespace detail {
// acc <- acc + s, the two windows aligned at their oldest words.
KEEL_HD constexpr void mt19937_add(mt19937_state& acc, const mt19937_state& s) {
  std::uint32_t a = acc.i, b = s.i;
  for (int k = 0; k < k_mt19937_n; ++k) {
    acc.x[a] ^= s.x[b];
    a = a + 1 == k_mt19937_n ? 0 : a + 1;
    b = b + 1 == k_mt19937_n ? 0 : b + 1;
  }
}
}  // namespace detail

// s <- q(A) s by Horner's rule (19937 steps and one state addition per non-zero coefficient).
// With q = x^J mod P this is J steps (see the header's note on freshly seeded states).
KEEL_HD constexpr void mt19937_apply(mt19937_state& s, const mt19937_poly& q) {
  mt19937_state acc{};
  for (int k = k_mt19937_mexp; k >= 0; --k) {
    mt19937_step(acc);
    if (q.coef(k)) detail::mt19937_add(acc, s);
  }
  s = acc;
}

// ---- Host: the characteristic polynomial and jump polynomials ------------------------------

namespace detail {

// Coefficients [k, k + 64) of a bit array (zero past `words`).
inline std::uint64_t bits64(const std::uint64_t* p, int words, int k) {
  const int q = k >> 6, r = k & 63;
  const std::uint64_t lo = q < words ? p[q] : 0;
  if (r == 0) return lo;
  const std::uint64_t hi = q + 1 < words ? p[q + 1] : 0;
  return (lo >> r) | (hi << (64 - r));
}
// p ^= v << k (v has at most 64 bits; p must be long enough).
inline void xor64(std::uint64_t* p, int k, std::uint64_t v) {
  const int q = k >> 6, r = k & 63;
  p[q] ^= v << r;
  if (r != 0 && (v >> (64 - r)) != 0) p[q + 1] ^= v >> (64 - r);
}

// Berlekamp-Massey over GF(2): the connection polynomial C (C[0] = 1) of the shortest LFSR
// that generates bits[0..n), with s_j = sum_{k=1..L} C_k s_{j-k}; returns L.
inline int berlekamp_massey(const std::vector<std::uint64_t>& bits, int n,
                            std::vector<std::uint64_t>& c) {
  const int words = n / 64 + 4;
  // Reversed sequence: rev bit k = s_{n-1-k}, so that the window s_{j-L..j} is contiguous.
  std::vector<std::uint64_t> rev(words, 0), b(words, 0), t;
  for (int k = 0; k < n; ++k)
    if ((bits[k >> 6] >> (k & 63)) & 1u)
      rev[(n - 1 - k) >> 6] |= std::uint64_t{1} << ((n - 1 - k) & 63);
  c.assign(words, 0);
  c[0] = b[0] = 1;
  int l = 0, m = 1;
  for (int j = 0; j < n; ++j) {
    // d = sum_{k=0..L} C_k s_{j-k}; s_{j-k} is rev bit n-1-j+k.
    std::uint64_t acc = 0;
    for (int k = 0; k <= l; k += 64) acc ^= c[k >> 6] & bits64(rev.data(), words, n - 1 - j + k);
    if (__builtin_parityll(acc) == 0) {
      ++m;
      continue;
    }
    const bool grow = 2 * l <= j;
    if (grow) t = c;
    // C <- C + x^m B (both of degree <= n, so the words past n / 64 + 1 stay zero)
    for (int k = 0; 64 * k + m + 64 <= 64 * words; ++k)
      if (b[k] != 0) xor64(c.data(), 64 * k + m, b[k]);
    if (grow) {
      l = j + 1 - l;
      b = t;
      m = 1;
    } else {
      ++m;
    }
  }
  return l;
}

// The exponents of the non-zero coefficients of P below x^19937, highest first.
struct mt19937_modulus {
  mt19937_poly p;
  std::vector<int> terms;
  int chunk;  // bits reducible at once: 19937 - (highest term below 19937), at most 64
};

inline const mt19937_modulus& mt19937_mod() {
  static const mt19937_modulus* m = [] {
    // 2 * 19937 bits of one output bit (bit 0 of successive words) from an arbitrary state.
    constexpr int k_bits = 2 * k_mt19937_mexp;
    std::vector<std::uint64_t> bits(k_bits / 64 + 1, 0);
    mt19937_state s = mt19937_seed(5489u);
    for (int k = 0; k < k_bits; ++k)
      if (mt19937_step(s) & 1u) bits[k >> 6] |= std::uint64_t{1} << (k & 63);
    std::vector<std::uint64_t> c;
    const int l = berlekamp_massey(bits, k_bits, c);
    auto* r = new mt19937_modulus{};
    // P(x) = x^L C(1/x). L is 19937 (P is primitive: the period is 2^19937 - 1; the tests
    // check the degree, the 135 terms and x^(2^19937) = x mod P).
    for (int k = 0; k <= l; ++k)
      if ((c[k >> 6] >> (k & 63)) & 1u) {
        const int e = l - k;
        r->p.w[e >> 6] |= std::uint64_t{1} << (e & 63);
        if (e < l) r->terms.push_back(e);
      }
    r->chunk = r->terms.empty() ? 1 : std::min(64, l - r->terms.front());
    return r;
  }();
  return *m;
}

// a (2 * 312 words, degree < 2 * 19937) reduced modulo P into r.
inline void mt19937_reduce(std::uint64_t* a, mt19937_poly& r) {
  const auto& mod = mt19937_mod();
  constexpr int k_reduced_words = 2 * mt19937_poly::k_words;
  for (int top = 64 * k_reduced_words - 1; top >= k_mt19937_mexp;) {
    const int w = std::min(mod.chunk, top - k_mt19937_mexp + 1);
    const int lo = top - w + 1;
    const std::uint64_t v = bits64(a, k_reduced_words, lo) &
                            (w == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << w) - 1);
    if (v != 0) {
      xor64(a, lo, v);  // clears them
      for (int t : mod.terms) xor64(a, lo - k_mt19937_mexp + t, v);
    }
    top = lo - 1;
  }
  for (int k = 0; k < mt19937_poly::k_words; ++k) r.w[k] = a[k];
}

inline std::uint64_t spread32(std::uint32_t v) {
  std::uint64_t x = v;
  x = (x | (x << 16)) & 0x0000ffff0000ffffull;
  x = (x | (x << 8)) & 0x00ff00ff00ff00ffull;
  x = (x | (x << 4)) & 0x0f0f0f0f0f0f0f0full;
  x = (x | (x << 2)) & 0x3333333333333333ull;
  return (x | (x << 1)) & 0x5555555555555555ull;
}

inline mt19937_poly mt19937_square(const mt19937_poly& p) {
  std::uint64_t a[2 * mt19937_poly::k_words];
  for (std::size_t k = 0; k < std::size(p.w); ++k) {
    a[2 * k] = spread32(static_cast<std::uint32_t>(p.w[k]));
    a[2 * k + 1] = spread32(static_cast<std::uint32_t>(p.w[k] >> 32));
  }
  mt19937_poly r{};
  mt19937_reduce(a, r);
  return r;
}

inline mt19937_poly mt19937_times_x(const mt19937_poly& p) {
  std::uint64_t a[2 * mt19937_poly::k_words] = {};
  for (int k = 0; k < mt19937_poly::k_words; ++k) {
    a[k] |= p.w[k] << 1;
    a[k + 1] |= p.w[k] >> 63;
  }
  mt19937_poly r{};
  mt19937_reduce(a, r);
  return r;
}

inline mt19937_poly mt19937_multiply(const mt19937_poly& p, const mt19937_poly& q) {
  std::uint64_t a[2 * mt19937_poly::k_words] = {};
  for (int k = 0; k <= k_mt19937_mexp; ++k)
    if (q.coef(k))
      for (int j = 0; j < mt19937_poly::k_words; ++j)
        if (p.w[j] != 0) xor64(a, 64 * j + k, p.w[j]);
  mt19937_poly r{};
  mt19937_reduce(a, r);
  return r;
}

}  // namespace detail

// P, the characteristic polynomial of one step (degree 19937).
inline const mt19937_poly& mt19937_characteristic_polynomial() { return detail::mt19937_mod().p; }

// x^n mod P: the polynomial of a jump of n steps.
inline mt19937_poly mt19937_jump_polynomial(std::uint64_t n) {
  mt19937_poly r{};
  r.w[0] = 1;
  for (int b = 63; b >= 0; --b) {
    r = detail::mt19937_square(r);
    if ((n >> b) & 1u) r = detail::mt19937_times_x(r);
  }
  return r;
}

// jump[k] = x^(2^(2048 + k)) mod P: a jump of 2^k subsequences, k < 64.
struct mt19937_jump_table {
  static constexpr int k_count = 64;
  std::array<mt19937_poly, k_count> jump;
};

inline const mt19937_jump_table& mt19937_jumps() {
  static const mt19937_jump_table* table = [] {
    auto* t = new mt19937_jump_table{};
    mt19937_poly p{};
    p.w[0] = 2;  // x
    for (int k = 0; k < k_mt19937_subsequence_log2; ++k) p = detail::mt19937_square(p);
    t->jump[0] = p;
    for (int k = 1; k < mt19937_jump_table::k_count; ++k)
      t->jump[k] = detail::mt19937_square(t->jump[k - 1]);
    return t;
  }();
  return *table;
}

// Advances by n steps (as n calls of mt19937_next). Short jumps step; long ones apply x^n mod P.
inline void mt19937_skipahead(mt19937_state& s, std::uint64_t n) {
  constexpr std::uint64_t k_step_limit = std::uint64_t{1} << 20;  // about the cost of one apply
  if (n <= k_step_limit) {
    for (; n > 0; --n) mt19937_step(s);
    return;
  }
  mt19937_step(s);  // from here on the state is reachable: the jump is exact
  mt19937_apply(s, mt19937_jump_polynomial(n - 1));
}

// Advances by n subsequences (n * 2^2048 steps).
inline void mt19937_skipahead_sequence(mt19937_state& s, std::uint64_t n) {
  const auto& t = mt19937_jumps();
  for (int k = 0; n != 0; ++k, n >>= 1)
    if (n & 1) mt19937_apply(s, t.jump[k]);
}

}  // namespace keel::random
