#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/log.hpp"

namespace keel {
namespace {

TEST(Error, EveryClassIsAKeelErrorAndOneStdException) {
  try {
    throw invalid_argument("bad");
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "bad");
  }
  try {
    throw out_of_memory("CUDA out of memory. Tried to allocate 2.00 MiB.");
  } catch (const std::bad_alloc& e) {
    EXPECT_STREQ(e.what(), "CUDA out of memory. Tried to allocate 2.00 MiB.");
  }
  try {
    throw backend_error("cudaMalloc failed");
  } catch (const std::exception& e) {  // unambiguous
    EXPECT_STREQ(e.what(), "cudaMalloc failed");
  }
  try {
    throw io_error("x: no such file");
  } catch (const error& e) {
    EXPECT_STREQ(e.what(), "x: no such file");
  }
}

TEST(Error, ParseErrorCarriesPosition) {
  const parse_error text("trace.json", 3, 14, "expected ','");
  EXPECT_STREQ(text.what(), "trace.json:3:14: expected ','");
  EXPECT_EQ(text.line(), 3u);
  EXPECT_EQ(text.column(), 14u);
  const parse_error binary = parse_error::at_offset("a.pickle", 1234, "opcode GLOBAL refused");
  EXPECT_STREQ(binary.what(), "a.pickle: byte 1234: opcode GLOBAL refused");
  EXPECT_EQ(binary.offset(), 1234u);
  EXPECT_EQ(binary.message(), "opcode GLOBAL refused");
}

TEST(Log, LevelsFilterAndSinkReceivesWholeLines) {
  std::vector<std::string> lines;
  set_log_sink([&](log_level level, std::string_view module, std::string_view message) {
    lines.push_back(std::string(to_string(level)) + " " + std::string(module) + " " +
                    std::string(message));
  });
  set_log_level(log_level::info);
  KEEL_LOG_DEBUG("core", "hidden {}", 1);
  KEEL_LOG_INFO("comm", "chose {} for {} bytes", "ring", 64);
  KEEL_LOG_WARN("memory", "careful");
  set_log_level(log_level::off);
  KEEL_LOG_WARN("memory", "silenced");
  set_log_sink({});
  set_log_level(log_level::warn);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "info comm chose ring for 64 bytes");
  EXPECT_EQ(lines[1], "warn memory careful");
}

TEST(Log, ParsesLevelNames) {
  EXPECT_EQ(parse_log_level("INFO"), log_level::info);
  EXPECT_EQ(parse_log_level("warning"), log_level::warn);
  EXPECT_EQ(parse_log_level("off"), log_level::off);
  EXPECT_THROW(parse_log_level("loud"), invalid_argument);
}

TEST(Log, ConcurrentWritersDoNotInterleave) {
  std::vector<std::string> lines;
  set_log_sink(
      [&](log_level, std::string_view, std::string_view message) { lines.emplace_back(message); });
  set_log_level(log_level::info);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) KEEL_LOG_INFO("test", "thread {} line {}", t, i);
    });
  }
  for (auto& th : threads) th.join();
  set_log_sink({});
  set_log_level(log_level::warn);
  EXPECT_EQ(lines.size(), 800u);
}

}  // namespace
}  // namespace keel
