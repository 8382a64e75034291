#include "keel/core/float16.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace keel {
namespace {

TEST(Float16, HalfConversionMatchesFloat16Hardware) {
  // Every finite half survives half -> float -> half; rounding matches _Float16.
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), h) << h;
  }
#if defined(__FLT16_MAX__)
  std::uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    float f;
    const std::uint32_t bits = (state & 0x8fffffffu) | ((state & 1u) << 30);
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    std::uint16_t want;
    std::memcpy(&want, &ref, 2);
    ASSERT_EQ(float_to_half(f), want) << f;
  }
#endif
}

TEST(Float16, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  float f;
  std::uint32_t bits = 0x3f808000u;  // halfway between 0x3f80 and 0x3f81: even wins
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(float_to_bf16(f), 0x3f80);
  bits = 0x3f818000u;
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(float_to_bf16(f), 0x3f82);
}

}  // namespace
}  // namespace keel
