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

#define KEEL_DISPATCH(FN, ...)                          \
  switch (active_level()) {                             \
    case level::avx512: return avx512::FN(__VA_ARGS__); \
    case level::avx2: return avx2::FN(__VA_ARGS__);     \
    default: return scalar::FN(__VA_ARGS__);            \
  }

void philox_u32(std::uint32_t* out, std::uint64_t p, std::size_t n, philox_key key,
                const std::uint32_t* shift) {
  KEEL_DISPATCH(philox_u32, out, p, n, key, shift)
}
void philox_uniform(float* out, std::uint64_t p, std::size_t n, philox_key key,
                    const std::uint32_t* shift) {
  KEEL_DISPATCH(philox_uniform, out, p, n, key, shift)
}
void philox_normal(float* out, std::uint64_t p, std::size_t n, philox_key key, float mean, float sd,
                   const std::uint32_t* shift) {
  KEEL_DISPATCH(philox_normal, out, p, n, key, mean, sd, shift)
}

bool has_row_kernels() noexcept { return active_level() != level::scalar; }

#define KEEL_DISPATCH_VECTOR(FN, ...)                   \
  switch (active_level()) {                             \
    case level::avx512: return avx512::FN(__VA_ARGS__); \
    default: return avx2::FN(__VA_ARGS__);              \
  }

void xorwow_rows(xorwow_state* st, std::size_t rows, row_kind kind, void* out, std::size_t stride,
                 float mean, float sd) {
  KEEL_DISPATCH_VECTOR(xorwow_rows, st, rows, kind, out, stride, mean, sd)
}
void mrg32k3a_rows(mrg32k3a_state* st, std::size_t rows, row_kind kind, void* out,
                   std::size_t stride, float mean, float sd) {
  KEEL_DISPATCH_VECTOR(mrg32k3a_rows, st, rows, kind, out, stride, mean, sd)
}
void logf16(const float* in, float* out) { KEEL_DISPATCH_VECTOR(logf16, in, out) }
void sincosf16(const float* in, float* s, float* c) { KEEL_DISPATCH_VECTOR(sincosf16, in, s, c) }
#undef KEEL_DISPATCH_VECTOR
#undef KEEL_DISPATCH

}  // namespace keel::random::detail::simd
