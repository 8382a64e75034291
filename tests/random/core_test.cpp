// Known answers of the header-only cores: Random123's Philox4x32-10 vectors, skip-ahead
// against stepping, and cuRAND's seeding.
#include <gtest/gtest.h>

#include "keel/random/mrg32k3a.hpp"
#include "keel/random/philox.hpp"
#include "keel/random/xorwow.hpp"

namespace kr = keel::random;

// Random123 kat_vectors, philox4x32 10 rounds.
static_assert(kr::philox4x32_10({{0, 0, 0, 0}}, {{0, 0}}) ==
              kr::philox_ctr{{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}});
static_assert(kr::philox4x32_10({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
                                {{0xffffffff, 0xffffffff}}) ==
              kr::philox_ctr{{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}});
static_assert(kr::philox4x32_10({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
                                {{0xa4093822, 0x299f31d0}}) ==
              kr::philox_ctr{{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}});

TEST(random_core, philox_known_answers_at_run_time) {
  const auto c = kr::philox4x32_10({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
                                   {{0xa4093822, 0x299f31d0}});
  EXPECT_EQ(c.v[0], 0xd16cfe09u);
  EXPECT_EQ(c.v[3], 0x24126ea1u);
}

TEST(random_core, xorwow_skipahead_equals_stepping) {
  for (std::uint64_t n : {0ull, 1ull, 2ull, 63ull, 64ull, 1000ull, 12345ull}) {
    kr::xorwow_state a = kr::xorwow_seed(77), b = a;
    for (std::uint64_t i = 0; i < n; ++i) kr::xorwow_next(a);
    kr::xorwow_skipahead(b, n);
    EXPECT_EQ(a, b) << n;
  }
}

TEST(random_core, xorwow_sequence_jump_is_two_to_the_67_steps) {
  // A^(2^67) composed from A^(2^66) twice: checks the table's consistency and that the
  // Weyl word is unchanged by a subsequence jump.
  kr::xorwow_state a = kr::xorwow_seed(5), b = a;
  kr::xorwow_skipahead_sequence(a, 3);
  for (int i = 0; i < 6; ++i) kr::detail::xorwow_apply(b, kr::xorwow_jumps().jump[66]);
  EXPECT_EQ(a, b);
}

TEST(random_core, mrg32k3a_skipahead_equals_stepping) {
  static_assert(kr::mrg32k3a_seed(0) ==
                kr::mrg32k3a_state{{12345, 12345, 12345}, {12345, 12345, 12345}});
  for (std::uint64_t n : {0ull, 1ull, 5ull, 1000ull, 99991ull}) {
    kr::mrg32k3a_state a = kr::mrg32k3a_seed(1234), b = a;
    for (std::uint64_t i = 0; i < n; ++i) kr::mrg32k3a_next(a);
    kr::mrg32k3a_skipahead(b, n);
    EXPECT_EQ(a, b) << n;
  }
  // One subsequence is 2^76 = (2^38)^2 steps: A^(2^76) = (A^(2^38))^(2^38).
  kr::mrg32k3a_state a = kr::mrg32k3a_seed(9);
  kr::mrg32k3a_skipahead_sequence(a, 1);
  kr::mrg32k3a_state c = kr::mrg32k3a_seed(9);
  const auto m1 = kr::k_mrg_a1.pow2_times(38, 1).pow2_times(38, 1);
  const auto m2 = kr::k_mrg_a2.pow2_times(38, 1).pow2_times(38, 1);
  m1.apply(c.s1);
  m2.apply(c.s2);
  EXPECT_EQ(a, c);
}
