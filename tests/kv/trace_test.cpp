#include "keel/kv/trace.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "keel/core/error.hpp"
#include "keel/kv/block_hash.hpp"
#include "kv_test_util.hpp"

namespace keel::kv {
namespace {

trace parse(const std::string& text, std::size_t block_size = 512) {
  std::istringstream in(text);
  return parse_trace(in, "t.jsonl", block_size);
}

TEST(Trace, ReadsMooncakeLinesInTimestampOrder) {
  const trace t = parse(
      "{\"timestamp\": 30, \"input_length\": 1000, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
      "\n"
      "{\"hash_ids\": [0, 2, 3], \"timestamp\": 10, \"input_length\": 1025, \"extra\": "
      "{\"a\": [1, \"x\\\"y\"], \"b\": null}}\n"
      "{\"timestamp\": 10.5, \"input_length\": 512, \"output_length\": 1e2, \"hash_ids\": [9]}\n");
  ASSERT_EQ(t.requests.size(), 3u);
  EXPECT_EQ(t.requests[0].timestamp_ms, 10u);
  EXPECT_EQ(t.requests[0].hashes, (std::vector<block_hash>{0, 2, 3}));
  EXPECT_EQ(t.requests[0].output_length, 0u);
  EXPECT_EQ(t.requests[1].timestamp_ms, 10u);  // 10.5 truncated, stable after the first 10
  EXPECT_EQ(t.requests[1].output_length, 100u);
  EXPECT_EQ(t.requests[2].timestamp_ms, 30u);
  EXPECT_EQ(t.requests[2].input_length, 1000u);
}

TEST(Trace, HashesRawTokensItself) {
  const trace t = parse("{\"timestamp\": 1, \"tokens\": [1,2,3,4,5,6,7,8,9,10]}\n", 4);
  ASSERT_EQ(t.requests.size(), 1u);
  EXPECT_EQ(t.requests[0].input_length, 10u);
  const std::vector<std::uint32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(t.requests[0].hashes, hash_blocks(tokens, 4));  // two full blocks
}

TEST(Trace, ErrorsNameTheLineAndColumn) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"timestamp\": 1, \"input_length\": 10, \"hash_ids\": [0, 1]}", "2 hash_ids"},
      {"{\"timestamp\": 1, \"input_length\": 10}", "needs \"hash_ids\" or \"tokens\""},
      {"{\"input_length\": 10, \"hash_ids\": [0]}", "missing \"timestamp\""},
      {"{\"timestamp\": 1, \"input_length\": 10, \"hash_ids\": [-1]}", "hash id"},
      {"{\"timestamp\": 1, \"input_length\": 10, \"hash_ids\": [0]", "expected '}'"},
      {"{\"timestamp\": -4, \"input_length\": 10, \"hash_ids\": [0]}", "non-negative"},
      {"{\"timestamp\": 1, \"tokens\": [1, 4294967296]}", "token id"},
      {"[1, 2]", "expected '{'"},
      {"{\"timestamp\": 1, \"input_length\": 0, \"hash_ids\": []} x", "trailing"},
  };
  for (const auto& [line, message] : bad) {
    try {
      parse("{\"timestamp\": 0, \"input_length\": 1, \"hash_ids\": [5]}\n" + line + "\n");
      ADD_FAILURE() << "accepted: " << line;
    } catch (const keel::parse_error& e) {
      EXPECT_EQ(e.line(), 2u) << line;
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("t.jsonl:2:", 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(load_trace("/nonexistent/trace.jsonl", 512), keel::io_error);
}

TEST(Trace, LoadsTheBundledMooncakeTrace) {
  const trace t = load_trace(test::mooncake_trace(), 512);
  ASSERT_EQ(t.requests.size(), 3993u);
  std::uint64_t tokens = 0;
  for (const trace_request& r : t.requests) tokens += r.input_length;
  EXPECT_NEAR(static_cast<double>(tokens) / 3993.0, 15325.5, 1.0);  // the published average
  EXPECT_THROW(load_trace(test::mooncake_trace(), 256), keel::parse_error);
}

}  // namespace
}  // namespace keel::kv
