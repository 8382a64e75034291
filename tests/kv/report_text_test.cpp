// keel/kv/report.hpp's to_text: what `keel kv replay|sweep` print, line for line.
#include <gtest/gtest.h>

#include <string>

#include "keel/kv/report.hpp"

namespace keel::kv {
namespace {

const std::string tokens_trace = std::string(KEEL_SOURCE_DIR) + "/tests/data/kv/seed_tokens.jsonl";

TEST(KvReportText, ReplayPrintsOneLinePerFigure) {
  replay_report rep;
  rep.source = "t.jsonl";
  rep.block_size = 4;
  rep.load_ms = 0.44;
  rep.result.policy = "lru";
  rep.result.index = "hash";
  rep.result.capacity_blocks = 10;
  rep.result.requests = 3;
  rep.result.hit_rate_tokens = 0.5;
  rep.result.hit_rate_blocks = 0.6;
  rep.result.infinite_hit_rate_tokens = 0.5;
  rep.result.evictions = 7;
  rep.result.elapsed_ms = 1.24;
  EXPECT_EQ(to_text(rep),
            "trace      t.jsonl (3 requests, 4 tokens per block)\n"
            "cache      10 blocks (40 tokens), policy lru, index hash, instant mode\n"
            "hit rate   50.00% of prompt tokens, 60.00% of blocks\n"
            "ceiling    50.00% with an infinite cache\n"
            "evictions  7\n"
            "time       1.2 ms replay, 0.4 ms loading the trace\n");
  rep.hold = true;
  rep.result.capacity_blocks.reset();
  rep.result.peak_held_blocks = 4;
  rep.result.rejected = 1;
  EXPECT_EQ(to_text(rep),
            "trace      t.jsonl (3 requests, 4 tokens per block)\n"
            "cache      inf, policy lru, index hash, hold mode\n"
            "hit rate   50.00% of prompt tokens, 60.00% of blocks\n"
            "ceiling    50.00% with an infinite cache\n"
            "evictions  7\n"
            "held       peak 4 blocks, 1 requests rejected for lack of free blocks\n"
            "time       1.2 ms replay, 0.4 ms loading the trace\n");
}

TEST(KvReportText, ReplayOfATraceNamesIt) {
  replay_request r;
  r.options.block_size = 4;
  r.capacity = "10blocks";
  const std::string text = to_text(run_replay(tokens_trace, r));
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "trace      " + tokens_trace + " (3 requests, 4 tokens per block)");
  EXPECT_NE(text.find("\nhit rate   50.00% of prompt tokens, 60.00% of blocks\n"),
            std::string::npos)
      << text;
}

TEST(KvReportText, SweepTabulatesPoliciesByCapacity) {
  sweep_request r;
  r.options.block_size = 4;
  r.capacities = {"10blocks", "20blocks"};
  r.policies = {"lru", "fifo"};
  sweep_report rep = run_sweep(tokens_trace, r);
  rep.elapsed_ms = 3.4;
  EXPECT_EQ(to_text(rep), tokens_trace +
                              " (3 requests, 4-token blocks, instant mode): token hit rate, "
                              "infinite 50.00%\n"
                              "        tokens   blocks      lru     fifo\n"
                              "            40       10   50.00%   50.00%\n"
                              "            80       20   50.00%   50.00%\n"
                              "4 replays in 3 ms\n");
  rep.svg = "chart.svg";
  const std::string text = to_text(rep);
  EXPECT_NE(text.find("\nchart: chart.svg\n4 replays in 3 ms\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace keel::kv
