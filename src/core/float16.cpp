#include "keel/core/float16.hpp"

#include <cstring>

namespace keel {

float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint16_t float_to_half(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {               // subnormal or zero in half
    if (abs < 0x33000000u) return sign;  // rounds to zero
    const std::uint32_t e = abs >> 23;
    const std::uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - e;  // 14 + (113 - e) - 1 ... bits to drop
    std::uint32_t r = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = abs - 0x38000000u;  // rebias exponent by (127-15) << 23
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (r >> 13));
}

}  // namespace keel
