// keel::float16 — the 16-bit floats of keel's dtypes as bits: IEEE binary16 (fp16) and
// bfloat16, converted to and from float with round to nearest even (NaN stays NaN, overflow
// becomes infinity). Portable code, no compiler half type: the collectives reduce fp16 and
// bf16 buffers with them and the inference server reads and writes such tensors.
// Pure functions: thread-safe.
#pragma once

#include <cstdint>

namespace keel {

float half_to_float(std::uint16_t h) noexcept;
std::uint16_t float_to_half(float f) noexcept;
inline float bf16_to_float(std::uint16_t b) noexcept {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
inline std::uint16_t float_to_bf16(float f) noexcept {
  std::uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

}  // namespace keel
