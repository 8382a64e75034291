// The replay targets of issue 6 on the bundled Mooncake trace, and replay's modes.
#include "keel/kv/replay.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "keel/core/error.hpp"
#include "kv_test_util.hpp"

namespace keel::kv {
namespace {

const trace& mooncake() {
  static const trace t = load_trace(test::mooncake_trace(), 512);
  return t;
}

replay_result run(const std::string& policy, std::optional<std::size_t> capacity, bool cap = true,
                  bool hold = false, const std::string& index = "hash") {
  replay_options o;
  o.policy = policy;
  o.capacity_blocks = capacity;
  o.cap_hit_at_last_token = cap;
  o.hold = hold;
  o.index = index;
  return replay(mooncake(), o);
}

constexpr std::size_t k_3m = 3'000'000 / 512;    // 5859 blocks
constexpr std::size_t k_10m = 10'240'000 / 512;  // 20000 blocks

// Reference (an independent replay): infinite 65.1%, LRU 3M 31.6%, LRU 10.24M 58.2%.
TEST(MooncakeReplay, ReproducesTheReferenceHitRatesWithinHalfAPoint) {
  for (const bool cap : {true, false}) {
    SCOPED_TRACE(cap ? "hit capped at num_tokens-1" : "uncapped");
    EXPECT_NEAR(infinite_hit_rate(mooncake(), cap), 0.651, 0.005);
    EXPECT_NEAR(run("lru", k_3m, cap).hit_rate_tokens, 0.316, 0.005);
    EXPECT_NEAR(run("lru", k_10m, cap).hit_rate_tokens, 0.582, 0.005);
  }
}

TEST(MooncakeReplay, BeladyBoundsEveryOnlinePolicy) {
  const double belady = run("belady", k_3m).hit_rate_tokens;
  const double infinite = infinite_hit_rate(mooncake());
  EXPECT_LE(belady, infinite);
  for (const std::string& p : online_policy_names()) {
    const replay_result r = run(p, k_3m);
    EXPECT_LT(r.hit_rate_tokens, belady) << p;
    EXPECT_GT(r.hit_rate_tokens, 0.2) << p;
    EXPECT_GT(r.evictions, 0u) << p;
    EXPECT_EQ(r.requests, 3993u);
  }
}

// keel's policy at the capacities of `keel kv sweep`: at least LRU everywhere, and the hit rate
// docs/BENCHMARKS.md reports at 3M tokens (34.71%; LRU 31.48%).
TEST(MooncakeReplay, KeelBeatsLruAtEverySweepCapacity) {
  const std::vector<std::size_t> caps{976, 1953, 3906, k_3m, 9765, 14648, k_10m, 29296, 39062};
  const std::vector<std::string> policies{"lru", "keel"};
  const auto points = sweep(mooncake(), caps, policies, {});
  ASSERT_EQ(points.size(), 2 * caps.size());
  for (std::size_t i = 0; i < caps.size(); ++i) {
    const double lru = points[i].hit_rate_tokens;
    const double keel = points[caps.size() + i].hit_rate_tokens;
    EXPECT_GE(keel, lru) << caps[i] << " blocks";
    if (caps[i] <= k_10m) {
      EXPECT_GT(keel, lru + 0.005) << caps[i] << " blocks";
    }
  }
  EXPECT_NEAR(run("keel", k_3m).hit_rate_tokens, 0.3471, 0.0005);
}

TEST(MooncakeReplay, RadixIndexGivesTheSameAnswers) {
  for (const char* policy : {"lru", "s3fifo"}) {
    const replay_result h = run(policy, k_3m, true, false, "hash");
    const replay_result r = run(policy, k_3m, true, false, "radix");
    EXPECT_EQ(h.hit_rate_tokens, r.hit_rate_tokens) << policy;
    EXPECT_EQ(h.evictions, r.evictions) << policy;
  }
}

TEST(MooncakeReplay, HoldModeKeepsBlocksBusyAndCostsHits) {
  const replay_result instant = run("lru", k_3m);
  const replay_result hold = run("lru", k_3m, true, true);
  EXPECT_GT(hold.peak_held_blocks, 100u);
  EXPECT_LE(hold.peak_held_blocks, k_3m);
  EXPECT_NEAR(hold.hit_rate_tokens, instant.hit_rate_tokens, 0.05);
  EXPECT_NEAR(hold.infinite_hit_rate_tokens, instant.infinite_hit_rate_tokens, 1e-12);
  // A cache barely larger than the largest request has to reject some while others run.
  const replay_result tight = run("lru", 400, true, true);
  EXPECT_GT(tight.rejected, 0u);
  EXPECT_LT(tight.hit_rate_tokens, hold.hit_rate_tokens);
}

// A capacity beyond what the trace can fill answers as "inf" does and costs no more: the pool
// is sized by min(capacity, the trace's need), so 10^12 blocks neither allocates 10^12 blocks
// nor changes a number (issue 15's "--capacity 1Gblocks" ran out of host memory).
TEST(MooncakeReplay, AHugeCapacityAnswersAsInfinityDoes) {
  const std::size_t huge = std::size_t{1} << 40;
  for (const char* policy : {"lru", "s3fifo", "keel", "belady"}) {
    SCOPED_TRACE(policy);
    const replay_result inf = run(policy, std::nullopt);
    const replay_result big = run(policy, huge);
    EXPECT_EQ(big.capacity_blocks.value_or(0), huge);
    EXPECT_EQ(big.hit_rate_tokens, inf.hit_rate_tokens);
    EXPECT_EQ(big.hit_rate_blocks, inf.hit_rate_blocks);
    EXPECT_EQ(big.evictions, 0u);
    EXPECT_EQ(big.infinite_hit_rate_tokens, inf.hit_rate_tokens);
    const replay_result held = run(policy, huge, true, true, "radix");
    EXPECT_EQ(held.rejected, 0u);
    EXPECT_EQ(held.evictions, 0u);
  }
  const std::vector<std::size_t> caps{huge};
  const std::vector<std::string> policies{"lru"};
  EXPECT_EQ(sweep(mooncake(), caps, policies, {}).at(0).hit_rate_tokens,
            infinite_hit_rate(mooncake()));
}

TEST(MooncakeReplay, HitRateGrowsWithCapacity) {
  const std::vector<std::size_t> caps{1000, 4000, 16000};
  const std::vector<std::string> policies{"lru", "belady"};
  const auto points = sweep(mooncake(), caps, policies, {});
  ASSERT_EQ(points.size(), 6u);
  for (std::size_t i = 1; i < 3; ++i) {
    EXPECT_GT(points[i].hit_rate_tokens, points[i - 1].hit_rate_tokens);
    EXPECT_GT(points[3 + i].hit_rate_tokens, points[3 + i - 1].hit_rate_tokens);
  }
  const std::string svg = sweep_svg(points, 0.65, 512, "a <title>");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("a &lt;title&gt;"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 10, true);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

// The targets hold on the shared original too, and examples/kv bundles it unchanged.
TEST(MooncakeReplay, SharedOriginalMatchesTheBundledCopyAndTheTargets) {
  const std::string shared = test::shared_mooncake_trace();
  if (shared.empty()) {
    GTEST_SKIP() << "shared trace folder absent (" << KEEL_SHARED_DIR
                 << "/traces/kvcache): nothing to compare the bundled copy with";
  }
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(shared), bytes(test::mooncake_trace()));
  const trace t = load_trace(shared, 512);
  ASSERT_EQ(t.requests.size(), 3993u);
  replay_options o;
  EXPECT_NEAR(replay(t, o).hit_rate_tokens, 0.651, 0.005);
  o.capacity_blocks = k_3m;
  EXPECT_NEAR(replay(t, o).hit_rate_tokens, 0.316, 0.005);
  o.capacity_blocks = k_10m;
  EXPECT_NEAR(replay(t, o).hit_rate_tokens, 0.582, 0.005);
}

TEST(Replay, TokenTraceReusesItsOwnPrefixes) {
  std::istringstream in(
      "{\"timestamp\": 0, \"tokens\": [1,2,3,4,5,6,7,8,9]}\n"
      "{\"timestamp\": 1, \"tokens\": [1,2,3,4,5,6,7,8,0,0]}\n");
  const trace t = parse_trace(in, "tokens", 4);
  replay_options o;
  o.capacity_blocks = 8;
  const replay_result r = replay(t, o);
  // The second request hits its two full blocks (8 of 19 prompt tokens).
  EXPECT_DOUBLE_EQ(r.hit_rate_tokens, 8.0 / 19.0);
}

// Found by the trace fuzzer: two running requests sharing a prefix were counted as holding
// their shared blocks twice, so peak_held_blocks exceeded the cache (5 of 4 blocks here).
TEST(Replay, HeldBlocksCountSharedPrefixesOnce) {
  std::istringstream in(
      "{\"timestamp\": 0, \"tokens\": [1, 2, 3, 4, 5, 6, 7, 8, 9], \"output_length\": 100}\n"
      "{\"timestamp\": 1, \"tokens\": [1, 2, 3, 4, 5, 6, 7, 8, 10], \"output_length\": 100}\n");
  const trace t = parse_trace(in, "shared.jsonl", 4);
  replay_options o;
  o.hold = true;
  o.capacity_blocks = 4;
  const replay_result r = replay(t, o);
  EXPECT_EQ(r.rejected, 0u);
  EXPECT_EQ(r.peak_held_blocks, 4u);  // two shared full blocks + one partial block each
}

TEST(Replay, ParsesCapacities) {
  EXPECT_EQ(parse_capacity("inf", 512), std::nullopt);
  EXPECT_EQ(parse_capacity("3M", 512), 5859u);
  EXPECT_EQ(parse_capacity("3000000tokens", 512), 5859u);
  EXPECT_EQ(parse_capacity("10.24M tokens", 512), 20000u);
  EXPECT_EQ(parse_capacity("5859blocks", 512), 5859u);
  EXPECT_EQ(parse_capacity("2k blocks", 16), 2000u);
  EXPECT_EQ(parse_capacity("1,024", 16), 64u);
  for (const char* bad : {"", "M", "-5", "3X", "1.2.3", "100", "blocks", "1e9999"}) {
    EXPECT_THROW(parse_capacity(bad, 512), keel::invalid_argument) << bad;
  }
  EXPECT_THROW(run("lru", 0), keel::invalid_argument);
  EXPECT_THROW(run("nope", 10), keel::invalid_argument);
}

}  // namespace
}  // namespace keel::kv
