// keel/kv/report.hpp: replay and sweep as requests, their checks and their JSON documents.
#include "keel/kv/report.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "error_message.hpp"
#include "keel/core/error.hpp"
#include "kv_test_util.hpp"

namespace keel::kv {
namespace {

const timed_trace& mooncake() {
  static const timed_trace t = load_timed_trace(test::mooncake_trace(), 512);
  return t;
}

using keel::test::message_of;

TEST(KvReport, ReplayDocumentHasTheCliKeysInOrder) {
  replay_request r;
  r.capacity = "3M";
  const nlohmann::ordered_json j = to_json(run_replay(mooncake(), r));
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"policy", "capacity_blocks", "requests",
                                            "hit_rate_tokens", "hit_rate_blocks",
                                            "infinite_hit_rate_tokens", "evictions", "elapsed_ms",
                                            "load_ms", "block_size", "index", "mode", "hit_cap"}));
  EXPECT_EQ(j["capacity_blocks"], 5859);
  EXPECT_EQ(j["requests"], 3993);
  EXPECT_EQ(j["mode"], "instant");
  EXPECT_EQ(j["hit_cap"], "num_tokens-1");
  EXPECT_NEAR(j["hit_rate_tokens"].get<double>(), 0.316, 0.005);
  EXPECT_EQ(j["load_ms"].get<double>(), mooncake().load_ms);
}

TEST(KvReport, ReplayFromAPathEqualsReplayOfTheLoadedTrace) {
  replay_request r;
  r.capacity = "5859blocks";
  r.policy = "keel";
  r.options.hold = true;
  r.options.index = "radix";
  r.options.cap_hit_at_last_token = false;
  const replay_report a = run_replay(test::mooncake_trace(), r);
  const replay_report b = run_replay(mooncake(), r);
  nlohmann::ordered_json ja = to_json(a), jb = to_json(b);
  for (auto* j : {&ja, &jb}) {
    EXPECT_TRUE(j->contains("rejected"));
    EXPECT_TRUE(j->contains("peak_held_blocks"));
    (*j)["elapsed_ms"] = 0;
    (*j)["load_ms"] = 0;
  }
  EXPECT_EQ(ja, jb);
  EXPECT_EQ(ja["mode"], "hold");
  EXPECT_EQ(ja["hit_cap"], "none");
  EXPECT_EQ(ja["index"], "radix");
}

TEST(KvReport, InfiniteCapacityIsNull) {
  const nlohmann::ordered_json j = to_json(run_replay(mooncake(), replay_request{}));
  EXPECT_TRUE(j["capacity_blocks"].is_null());
  EXPECT_EQ(j["evictions"], 0);
}

TEST(KvReport, RequestsAreCheckedBeforeTheTraceIsRead) {
  // A bad policy or capacity is reported even though the trace does not exist.
  replay_request r;
  r.policy = "mru";
  EXPECT_NE(
      message_of([&] { run_replay("/nonexistent.jsonl", r); }).find("unknown eviction policy"),
      std::string::npos);
  r = {};
  r.capacity = "lots";
  EXPECT_NE(message_of([&] { run_replay("/nonexistent.jsonl", r); }).find("capacity 'lots'"),
            std::string::npos);
  r = {};
  EXPECT_THROW(run_replay("/nonexistent.jsonl", r), keel::io_error);
  sweep_request s;
  s.capacities = {"1M", "inf"};
  EXPECT_EQ(message_of([&] { run_sweep("/nonexistent.jsonl", s); }),
            "sweep: capacities must be finite");
}

TEST(KvReport, OptionsGetTheCliMessages) {
  trace_replay_options o;
  o.block_size = 0;
  EXPECT_EQ(message_of([&] { validate(o); }),
            "--block-size: 0 is out of range, expected an integer in [1, 1048576]");
  o = {};
  o.model.prefill_tokens_per_s = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(message_of([&] { validate(o); }),
            "--prefill-tps: nan is not a finite number, expected a number > 0");
  o = {};
  o.model.decode_ms_per_token = -1;
  EXPECT_EQ(message_of([&] { validate(o); }),
            "--tpot-ms: -1 is out of range, expected a number >= 0");
  o = {};
  o.index = "btree";
  EXPECT_NE(message_of([&] { validate(o); }).find("unknown prefix index 'btree'"),
            std::string::npos);
}

TEST(KvReport, ABlockSizeOtherThanTheTracesIsRefused) {
  replay_request r;
  r.options.block_size = 256;
  EXPECT_NE(message_of([&] { run_replay(mooncake(), r); }).find("512-token blocks"),
            std::string::npos);
}

TEST(KvReport, EmptyTraceIsRefused) {
  const std::filesystem::path p =
      std::filesystem::path(testing::TempDir()) / "kv_report_empty.jsonl";
  std::ofstream(p) << "\n";
  EXPECT_EQ(message_of([&] { load_timed_trace(p.string(), 512); }), p.string() + ": no requests");
}

TEST(KvReport, SweepWritesTheChartAndTheDocument) {
  const std::filesystem::path svg = std::filesystem::path(testing::TempDir()) / "kv_report.svg";
  std::filesystem::remove(svg);
  sweep_request s;
  s.capacities = {"1M", "3M"};
  s.policies = {"lru", "belady"};
  s.svg = svg.string();
  const sweep_report rep = run_sweep(mooncake(), s);
  ASSERT_TRUE(std::filesystem::exists(svg));
  EXPECT_EQ(rep.capacities_blocks, (std::vector<std::size_t>{1953, 5859}));
  ASSERT_EQ(rep.points.size(), 4u);
  EXPECT_EQ(rep.points[0].policy, "lru");
  EXPECT_EQ(rep.points[3].policy, "belady");
  const nlohmann::ordered_json j = to_json(rep);
  EXPECT_EQ(j["trace"], test::mooncake_trace());
  EXPECT_EQ(j["requests"], 3993);
  EXPECT_EQ(j["points"][1]["capacity_tokens"], 5859 * 512);
  EXPECT_EQ(j["svg"], svg.string());
  EXPECT_NE(sweep_chart(rep).find("mooncake-synthetic.jsonl: prefix hit rate vs. capacity"),
            std::string::npos);
  // The points are what replay answers at the same capacity.
  replay_request r;
  r.capacity = "3M";
  EXPECT_EQ(run_replay(mooncake(), r).result.hit_rate_tokens, rep.points[1].hit_rate_tokens);
  s.svg.reset();
  EXPECT_TRUE(to_json(run_sweep(mooncake(), s))["svg"].is_null());
}

TEST(KvReport, DefaultSweepCapacities) {
  EXPECT_EQ(default_sweep_capacities().size(), 9u);
  EXPECT_EQ(sweep_request{}.policies, policy_names());
}

}  // namespace
}  // namespace keel::kv
