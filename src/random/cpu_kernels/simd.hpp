// Internal: the hot loops, in a scalar reference version and SIMD versions chosen at run
// time (AVX-512, AVX2). Every version writes the same bits; tests compare them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "keel/random/mrg32k3a.hpp"
#include "keel/random/philox.hpp"
#include "keel/random/xorwow.hpp"

namespace keel::random::detail::simd {

enum class level { scalar = 0, avx2 = 1, avx512 = 2 };

// The level in use: the best the CPU supports, capped by KEEL_RANDOM_SIMD.
level active_level() noexcept;
// Forces a level (tests); a level the CPU lacks is capped to what it supports.
void force_level(level l) noexcept;

// The one way keel::random picks a kernel. A kernel family declares its versions in the
// namespaces simd::scalar, simd::avx2 and simd::avx512 (a family without a scalar version
// passes its fallback, or nullptr where callers check has_row_kernels() or handle a null
// kernel); by_level returns the one of level `l` — a function pointer or a struct of them.
// Callers that run many kernels of one family pick once per call (a struct), not per kernel.
template <class T>
constexpr T by_level(level l, T scalar, T avx2, T avx512) noexcept {
  return l == level::avx512 ? avx512 : l == level::avx2 ? avx2 : scalar;
}
template <class T>
T by_level(T scalar, T avx2, T avx512) noexcept {
  return by_level(active_level(), scalar, avx2, avx512);
}

// Philox outputs for positions [p, p + n).
void philox_u32(std::uint32_t* out, std::uint64_t p, std::size_t n, philox_key key,
                const std::uint32_t* shift);
void philox_uniform(float* out, std::uint64_t p, std::size_t n, philox_key key,
                    const std::uint32_t* shift);
void philox_normal(float* out, std::uint64_t p, std::size_t n, philox_key key, float mean, float sd,
                   const std::uint32_t* shift);

// The kinds the row kernels of the thread-layout generators vectorize.
enum class row_kind { u32, uniform, normal };

// Threads per call of the row kernels.
inline constexpr int k_row_lanes = 16;

// Row kernels: 16 consecutive threads' states `st`, `rows` slots each; lane i's slot j goes to
// slot index i + j * stride of `out` (normal: two floats per slot). States are advanced.
// Only for the SIMD levels; the scalar engine loops per thread.
bool has_row_kernels() noexcept;
void xorwow_rows(xorwow_state* st, std::size_t rows, row_kind kind, void* out, std::size_t stride,
                 float mean, float sd);
void mrg32k3a_rows(mrg32k3a_state* st, std::size_t rows, row_kind kind, void* out,
                   std::size_t stride, float mean, float sd);
// The vector logf / sincosf on 16 inputs at the active level (for exhaustive checks).
void logf16(const float* in, float* out);
void sincosf16(const float* in, float* s, float* c);

#define KEEL_RANDOM_SIMD_DECLS                                                               \
  void philox_u32(std::uint32_t* out, std::uint64_t p, std::size_t n, philox_key key,        \
                  const std::uint32_t* shift);                                               \
  void philox_uniform(float* out, std::uint64_t p, std::size_t n, philox_key key,            \
                      const std::uint32_t* shift);                                           \
  void philox_normal(float* out, std::uint64_t p, std::size_t n, philox_key key, float mean, \
                     float sd, const std::uint32_t* shift);
#define KEEL_RANDOM_VECTOR_DECLS                                                     \
  void xorwow_rows(xorwow_state* st, std::size_t rows, row_kind kind, void* out,     \
                   std::size_t stride, float mean, float sd);                        \
  void mrg32k3a_rows(mrg32k3a_state* st, std::size_t rows, row_kind kind, void* out, \
                     std::size_t stride, float mean, float sd);                      \
  void logf16(const float* in, float* out);                                          \
  void sincosf16(const float* in, float* s, float* c);
namespace scalar {
KEEL_RANDOM_SIMD_DECLS
}
namespace avx2 {
KEEL_RANDOM_SIMD_DECLS
KEEL_RANDOM_VECTOR_DECLS
}  // namespace avx2
namespace avx512 {
KEEL_RANDOM_SIMD_DECLS
KEEL_RANDOM_VECTOR_DECLS
}  // namespace avx512
#undef KEEL_RANDOM_VECTOR_DECLS
#undef KEEL_RANDOM_SIMD_DECLS

}  // namespace keel::random::detail::simd
