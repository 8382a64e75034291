#include "keel/core/bytes.hpp"

#include <gtest/gtest.h>

#include <random>

#include "keel/core/error.hpp"

namespace keel {
namespace {

TEST(ParseSize, PlainNumbersAreBytes) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size(" 512 "), 512u);
  EXPECT_EQ(parse_size("18446744073709551615"), 18446744073709551615ull);
}

TEST(ParseSize, UnitsAsPyTorchUsersWriteThem) {
  EXPECT_EQ(parse_size("20MiB"), 20 * k_mib);
  EXPECT_EQ(parse_size("512MB"), 512 * k_mib);
  EXPECT_EQ(parse_size("512 mb"), 512 * k_mib);
  EXPECT_EQ(parse_size("80G"), 80 * k_gib);
  EXPECT_EQ(parse_size("80GB"), 80 * k_gib);
  EXPECT_EQ(parse_size("2 KiB"), 2048u);
  EXPECT_EQ(parse_size("1 TiB"), k_tib);
  EXPECT_EQ(parse_size("512 bytes"), 512u);
  EXPECT_EQ(parse_size("7B"), 7u);
  EXPECT_EQ(parse_size("1.5 GiB"), 3 * k_gib / 2);
}

TEST(ParseSize, FractionsRoundToTheNearestByte) {
  // 1.39 * 2^30 = 1492501135.36
  EXPECT_EQ(parse_size("1.39 GiB"), 1492501135u);
  EXPECT_EQ(parse_size("0.5 B"), 1u);  // ties round up
  EXPECT_EQ(parse_size("0.49 B"), 0u);
  EXPECT_EQ(parse_size(".25 KiB"), 256u);
  EXPECT_EQ(parse_size("2. KiB"), 2048u);
}

TEST(ParseSize, ErrorsNameTheProblem) {
  const auto message = [](const char* text) {
    try {
      parse_size(text);
    } catch (const invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("12 parsecs").find("unknown unit 'parsecs'"), std::string::npos);
  EXPECT_NE(message("12 parsecs").find("'12 parsecs'"), std::string::npos);
  EXPECT_NE(message("").find("empty"), std::string::npos);
  EXPECT_NE(message("-5MiB").find("negative"), std::string::npos);
  EXPECT_NE(message("GiB").find("no number"), std::string::npos);
  EXPECT_NE(message("16 PiB PiB").find("unknown unit"), std::string::npos);
  EXPECT_NE(message("18446744073709551616").find("64 bits"), std::string::npos);
  EXPECT_NE(message("99999999999 TiB").find("64 bits"), std::string::npos);
  EXPECT_NE(message("1e9").find("unknown unit 'e9'"), std::string::npos);
  EXPECT_THROW(parse_size("1.2.3"), invalid_argument);
}

TEST(FormatSize, MatchesPyTorchMessages) {
  EXPECT_EQ(format_size(512), "512 bytes");
  EXPECT_EQ(format_size(1024), "1024 bytes");
  EXPECT_EQ(format_size(2 * k_mib), "2.00 MiB");
  EXPECT_EQ(format_size(1492501135), "1.39 GiB");
  EXPECT_EQ(format_size(1536), "1.50 KiB");
}

TEST(FormatSizeExact, ShortWhenExact) {
  EXPECT_EQ(format_size_exact(0), "0 bytes");
  EXPECT_EQ(format_size_exact(4097), "4097 bytes");
  EXPECT_EQ(format_size_exact(20 * k_mib), "20 MiB");
  EXPECT_EQ(format_size_exact(3 * k_gib / 2), "1.5 GiB");
  EXPECT_EQ(format_size_exact(9 * k_gib / 8), "1.125 GiB");
  EXPECT_EQ(format_size_exact(1536 * k_kib), "1.5 MiB");
}

TEST(FormatSizeExact, RoundTripsExactly) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 100000; ++i) {
    std::uint64_t n = rng() >> (rng() % 64);
    if (i % 3 == 0) n &= ~std::uint64_t{0} << (rng() % 40);  // many multiples of 2^k
    ASSERT_EQ(parse_size(format_size_exact(n)), n) << format_size_exact(n);
  }
  ASSERT_EQ(parse_size(format_size_exact(~std::uint64_t{0})), ~std::uint64_t{0});
}

TEST(FormatSize, ParsesBackWithinRounding) {
  for (std::uint64_t n : {3ull, 5000ull, 123456789ull, 98765432109ull}) {
    const std::uint64_t back = parse_size(format_size(n));
    const double rel = std::abs(static_cast<double>(back) - static_cast<double>(n)) / n;
    EXPECT_LT(rel, 0.005) << format_size(n);
  }
}

}  // namespace
}  // namespace keel
