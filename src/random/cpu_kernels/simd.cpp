// Run-time selection of the SIMD level for keel::random's hot loops.
#include "simd.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace keel::random::detail::simd {
namespace {

level cpu_level() noexcept {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return level::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return level::avx2;
#endif
  return level::scalar;
}

level initial_level() noexcept {
  level l = cpu_level();
  if (const char* env = std::getenv("KEEL_RANDOM_SIMD")) {
    if (std::strcmp(env, "scalar") == 0)
      l = level::scalar;
    else if (std::strcmp(env, "avx2") == 0 && l >= level::avx2)
      l = level::avx2;
  }
  return l;
}

std::atomic<level>& current() {
  static std::atomic<level> l{initial_level()};
  return l;
}

}  // namespace

level active_level() noexcept { return current().load(std::memory_order_relaxed); }
void force_level(level l) noexcept {
  current().store(std::min(l, cpu_level()), std::memory_order_relaxed);
}

void philox_u32(std::uint32_t* out, std::uint64_t p, std::size_t n, philox_key key,
                const std::uint32_t* shift) {
  by_level(scalar::philox_u32, avx2::philox_u32, avx512::philox_u32)(out, p, n, key, shift);
}
void philox_uniform(float* out, std::uint64_t p, std::size_t n, philox_key key,
                    const std::uint32_t* shift) {
  by_level(scalar::philox_uniform, avx2::philox_uniform, avx512::philox_uniform)(out, p, n, key,
                                                                                 shift);
}
void philox_normal(float* out, std::uint64_t p, std::size_t n, philox_key key, float mean, float sd,
                   const std::uint32_t* shift) {
  by_level(scalar::philox_normal, avx2::philox_normal, avx512::philox_normal)(out, p, n, key, mean,
                                                                              sd, shift);
}

bool has_row_kernels() noexcept { return active_level() != level::scalar; }

// The row kernels and the exhaustive-check hooks exist only as vector code: callers check
// has_row_kernels() first (the hooks run the AVX2 version at the scalar level, which the
// checks only request on a CPU that has it).
void xorwow_rows(xorwow_state* st, std::size_t rows, row_kind kind, void* out, std::size_t stride,
                 float mean, float sd) {
  by_level(avx2::xorwow_rows, avx2::xorwow_rows, avx512::xorwow_rows)(st, rows, kind, out, stride,
                                                                      mean, sd);
}
void mrg32k3a_rows(mrg32k3a_state* st, std::size_t rows, row_kind kind, void* out,
                   std::size_t stride, float mean, float sd) {
  by_level(avx2::mrg32k3a_rows, avx2::mrg32k3a_rows, avx512::mrg32k3a_rows)(st, rows, kind, out,
                                                                            stride, mean, sd);
}
void logf16(const float* in, float* out) {
  by_level(avx2::logf16, avx2::logf16, avx512::logf16)(in, out);
}
void sincosf16(const float* in, float* s, float* c) {
  by_level(avx2::sincosf16, avx2::sincosf16, avx512::sincosf16)(in, s, c);
}

}  // namespace keel::random::detail::simd
