// `keel kv replay` and `keel kv sweep`, run as a user would.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "kv_test_util.hpp"
#include "process.hpp"

namespace keel::test {
namespace {

TEST(KvCli, ReplayJsonFollowsTheContract) {
  const process_result r = run_keel({"kv", "replay", kv::test::mooncake_trace(), "--block-size",
                                     "512", "--capacity", "3M", "--policy", "lru", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"policy", "capacity_blocks", "requests", "hit_rate_tokens", "hit_rate_blocks",
        "infinite_hit_rate_tokens", "evictions", "elapsed_ms"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["policy"], "lru");
  EXPECT_EQ(j["capacity_blocks"], 5859);
  EXPECT_EQ(j["requests"], 3993);
  EXPECT_NEAR(j["hit_rate_tokens"].get<double>(), 0.316, 0.005);
  EXPECT_NEAR(j["infinite_hit_rate_tokens"].get<double>(), 0.651, 0.005);
  EXPECT_GT(j["evictions"].get<int>(), 0);
}

TEST(KvCli, ReplayInfiniteHoldAndText) {
  process_result r =
      run_keel({"kv", "replay", kv::test::mooncake_trace(), "--capacity", "inf", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["capacity_blocks"].is_null());
  EXPECT_EQ(j["evictions"], 0);
  EXPECT_EQ(j["hit_rate_tokens"], j["infinite_hit_rate_tokens"]);
  r = run_keel({"kv", "replay", kv::test::mooncake_trace(), "--capacity", "5859blocks", "--policy",
                "keel", "--hold", "--index", "radix"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hit rate"), std::string::npos);
  EXPECT_NE(r.out.find("hold mode"), std::string::npos);
}

TEST(KvCli, BadInputIsOneLineAndExitTwo) {
  const std::string trace = kv::test::mooncake_trace();
  const std::filesystem::path bad =
      std::filesystem::path(KEEL_BINARY_DIR) / "kv_cli_test_bad.jsonl";
  std::ofstream(bad) << "{\"timestamp\": 0, \"input_length\": 600, \"hash_ids\": [1, 2]}\n"
                        "{\"timestamp\": 1, \"input_length\": 600, \"hash_ids\": [1, 2}\n";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"kv", "replay", "/nonexistent.jsonl"},
           {"kv", "replay", trace, "--policy", "mru"},
           {"kv", "replay", trace, "--capacity", "lots"},
           {"kv", "replay", trace, "--block-size", "256"},
           {"kv", "replay", bad.string()},
           {"kv", "sweep", trace, "--capacities", "inf"},
       }) {
    const process_result r = run_keel(args);
    EXPECT_EQ(r.exit_code, 2) << testing::PrintToString(args) << r.out;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("keel: ", 0), 0u) << r.err;
  }
  const process_result r = run_keel({"kv", "replay", bad.string()});
  EXPECT_NE(r.err.find("kv_cli_test_bad.jsonl:2:"), std::string::npos) << r.err;
}

TEST(KvCli, SweepPrintsATableAndWritesTheChart) {
  const std::filesystem::path svg = std::filesystem::path(KEEL_BINARY_DIR) / "kv_cli_sweep.svg";
  std::filesystem::remove(svg);
  process_result r = run_keel({"kv", "sweep", kv::test::mooncake_trace(), "--capacities", "1M,3M",
                               "--policies", "lru,belady", "--svg", svg.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("belady"), std::string::npos);
  EXPECT_NE(r.out.find("2999808"), std::string::npos);  // 3M tokens = 5859 whole blocks
  ASSERT_TRUE(std::filesystem::exists(svg));
  r = run_keel({"kv", "sweep", kv::test::mooncake_trace(), "--capacities", "3M", "--policies",
                "lru", "--no-svg", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 1u);
  EXPECT_EQ(j["points"][0]["capacity_tokens"], 5859 * 512);
  EXPECT_TRUE(j["svg"].is_null());
}

}  // namespace
}  // namespace keel::test
