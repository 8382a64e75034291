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

// The reader follows JSON (RFC 8259) where the first fuzzer run against nlohmann::json's
// parser found it did not: escaped keys are the keys they spell, \u needs four hex digits and
// paired surrogates, strings are UTF-8, and a number beyond a double is refused instead of read
// as 0 (a timestamp of 1e400 was silently 0).
TEST(Trace, FollowsJsonForKeysStringsAndNumbers) {
  const trace t = parse(
      "{\"t\\u0069me\\u0073tam\\u0070\": 7, \"input_length\": 512, \"hash_ids\": [3], "
      "\"x\": \"\\ud83d\\ude00 \xc3\xa9 \\u00e9\", \"y\": 1e-400}\n"
      "{\"timestamp\": -0, \"input_length\": 512, \"hash_ids\": [-0], \"timestamp\": 2}\n");
  ASSERT_EQ(t.requests.size(), 2u);
  EXPECT_EQ(t.requests[0].timestamp_ms, 2u);  // the last of a repeated key counts
  EXPECT_EQ(t.requests[0].hashes, (std::vector<block_hash>{0}));  // -0 is 0
  EXPECT_EQ(t.requests[1].timestamp_ms, 7u);  // "t\u0069me\u0073tam\u0070" is "timestamp"

  const std::string ok = "\"input_length\": 512, \"hash_ids\": [3]";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"timestamp\": 1e400, " + ok + "}", "number out of range"},
      {"{\"timestamp\": 1, \"output_length\": -1e999, " + ok + "}", "number out of range"},
      {"{\"timestamp\": 1, \"x\": 1e309, " + ok + "}", "number out of range"},
      {"{\"timestamp\": 9007199254740993, " + ok + "}", "up to 2^53"},
      {"{\"timestamp\": 1.8e19, " + ok + "}", "up to 2^53"},
      {"{\"timestamp\": 1, \"x\": \"\\u12\", " + ok + "}", "bad \\u escape"},
      {"{\"timestamp\": 1, \"x\": \"\\ud800\", " + ok + "}", "unpaired surrogate"},
      {"{\"timestamp\": 1, \"x\": \"\\udc00\\ud800\", " + ok + "}", "unpaired surrogate"},
      {"{\"timestamp\": 1, \"x\": \"\\ud800\\u0041\", " + ok + "}", "unpaired surrogate"},
      {"{\"timestamp\": 1, \"x\": \"\xff\", " + ok + "}", "invalid UTF-8"},
      {"{\"timestamp\": 1, \"x\": \"\xc0\xaf\", " + ok + "}", "invalid UTF-8"},
      {"{\"timestamp\": 1, \"x\": \"\xed\xa0\x80\", " + ok + "}", "invalid UTF-8"},
      {"{\"timestamp\": 1, \"x\": \"\xe2\x82\", " + ok + "}", "invalid UTF-8"},
      {"{\"timestamp\": 1, \"x\": \"\\x\", " + ok + "}", "bad escape"},
  };
  for (const auto& [line, message] : bad) {
    try {
      parse(line + "\n");
      ADD_FAILURE() << "accepted: " << line;
    } catch (const keel::parse_error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// An unknown value may nest 65 levels within the line's object; one more is refused, at the
// bracket that goes too deep.
TEST(Trace, UnknownValuesNestUpTo65Levels) {
  const auto line = [](std::size_t depth) {
    return "{\"x\": " + std::string(depth, '[') + std::string(depth, ']') +
           ", \"timestamp\": 1, \"input_length\": 512, \"hash_ids\": [3]}\n";
  };
  EXPECT_EQ(parse(line(65)).requests.size(), 1u);
  try {
    parse(line(66));
    ADD_FAILURE() << "accepted 66 levels";
  } catch (const keel::parse_error& e) {
    EXPECT_EQ(e.column(), 7u + 65u) << e.what();
    EXPECT_NE(std::string(e.what()).find("nesting deeper than"), std::string::npos) << e.what();
  }
}

// Found by the trace fuzzer: an id under two parents ([2, 0] then [0, 4]) made the hash index
// find a block the radix index could not, so the two indexes gave different hit rates.
TEST(Trace, HashIdsMustChainConsistently) {
  const std::string first = "{\"timestamp\": 0, \"input_length\": 1024, \"hash_ids\": [2, 0]}\n";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"timestamp\": 1, \"input_length\": 1024, \"hash_ids\": [0, 4]}",
       "t.jsonl:2:1: hash id 0 starts a request here but follows 2 on line 1"},
      {"{\"timestamp\": 1, \"input_length\": 1024, \"hash_ids\": [3, 0]}",
       "hash id 0 follows 3 here but follows 2 on line 1"},
      {"{\"timestamp\": 1, \"input_length\": 1536, \"hash_ids\": [7, 7, 7]}",
       "hash id 7 follows 7 here but starts a request on line 2"},
      {"{\"timestamp\": 1, \"input_length\": 512, \"hash_ids\": [0]}",
       "hash id 0 starts a request here but follows 2 on line 1"},
  };
  for (const auto& [line, message] : bad) {
    try {
      parse(first + line + "\n");
      ADD_FAILURE() << "accepted: " << line;
    } catch (const keel::parse_error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  // A shared prefix, a longer chain and a fresh one are fine.
  EXPECT_EQ(parse(first + "{\"timestamp\": 1, \"input_length\": 1500, \"hash_ids\": [2, 0, 5]}\n"
                          "{\"timestamp\": 2, \"input_length\": 100, \"hash_ids\": [9]}\n")
                .requests.size(),
            3u);
}

// A block size near SIZE_MAX must not wrap the block count of a request.
TEST(Trace, BlockCountDoesNotWrapForHugeBlockSizes) {
  const trace t =
      parse("{\"timestamp\": 1, \"input_length\": 10, \"hash_ids\": [3]}\n", ~std::size_t{0});
  ASSERT_EQ(t.requests.size(), 1u);
  EXPECT_EQ(t.requests[0].hashes.size(), 1u);
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
