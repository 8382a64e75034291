// A square matrix over GF(2) acting on an N-word bit vector (N 32-bit words, 32*N bits),
// stored by columns: column b is the image of basis vector b. Used to build skip-ahead
// (jump) matrices from a linear generator's one-step transition, by repeated squaring.
// Plain value type; no shared state.
#pragma once

#include <array>
#include <cstdint>

#include "keel/random/detail/hd.hpp"

namespace keel::random::detail {

template <int N>
struct gf2_matrix {
  static constexpr int k_bits = 32 * N;
  using vector = std::array<std::uint32_t, N>;
  std::array<vector, k_bits> col{};

  KEEL_HD constexpr vector apply(const vector& x) const {
    vector r{};
    for (int w = 0; w < N; ++w) {
      std::uint32_t bits = x[w];
      while (bits != 0) {
#if defined(__CUDA_ARCH__)
        const int b = __ffs(static_cast<int>(bits)) - 1;
#else
        const int b = __builtin_ctz(bits);
#endif
        bits &= bits - 1;
        const vector& c = col[32 * w + b];
        for (int i = 0; i < N; ++i) r[i] ^= c[i];
      }
    }
    return r;
  }

  // (*this) * other: first other, then this.
  constexpr gf2_matrix compose(const gf2_matrix& other) const {
    gf2_matrix r;
    for (int b = 0; b < k_bits; ++b) r.col[b] = apply(other.col[b]);
    return r;
  }

  // The matrix of a linear map given as a callable vector -> vector.
  template <class F>
  static constexpr gf2_matrix of(F&& step) {
    gf2_matrix m;
    for (int b = 0; b < k_bits; ++b) {
      vector e{};
      e[b / 32] = 1u << (b % 32);
      m.col[b] = step(e);
    }
    return m;
  }
};

}  // namespace keel::random::detail
