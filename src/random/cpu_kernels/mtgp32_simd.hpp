// Internal: MTGP32's round on the engine's linear state, in AVX2 and AVX-512 versions (the
// engine holds the scalar one and picks by simd::active_level()); all write the same bits as
// mtgp32_round. Only declarations here: nothing inline is compiled for the wider ISAs.
//
// The linear state x holds the block's last N words in x[0..N); a round computes the next 256
// words into x[N..N+256) and their tempered outputs into out (which must not alias x). The
// caller then moves x[256..N+256) down to x[0..N). With pos <= N - 256 no lane reads a word of
// its own round, so the 256 lanes are independent and vectorize directly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "keel/random/mtgp32.hpp"

namespace keel::random::detail {

inline constexpr int k_mtgp32_linear = k_mtgp32_n + k_mtgp32_threads;

using mtgp32_round_fn = void (*)(std::uint32_t* x, const mtgp32_params& p, std::uint32_t* out);

// The round, and cuRAND's uniform float and 32-bit uniform double conversions of n words.
#define KEEL_MTGP32_KERNELS                                                               \
  void mtgp32_linear_round(std::uint32_t* x, const mtgp32_params& p, std::uint32_t* out); \
  void uniform_floats(const std::uint32_t* w, std::size_t n, float* out);                 \
  void uniform_doubles_32(const std::uint32_t* w, std::size_t n, double* out);
namespace simd::avx2 {
KEEL_MTGP32_KERNELS
}
namespace simd::avx512 {
KEEL_MTGP32_KERNELS
}
#undef KEEL_MTGP32_KERNELS

}  // namespace keel::random::detail
