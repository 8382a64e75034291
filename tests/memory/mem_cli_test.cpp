// `keel mem` end to end: exit codes and one-line errors for bad input, the JSON contracts,
// and the HTML report rendered in headless Chromium.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "process.hpp"

namespace keel::test {
namespace {

const std::string k_example = std::string(KEEL_SOURCE_DIR) + "/examples/memory/train-varlen.pickle";
const std::string k_data = std::string(KEEL_SOURCE_DIR) + "/tests/data/memory/";

void expect_bad_input(const std::vector<std::string>& args, const std::string& needle) {
  const process_result r = run_keel(args);
  EXPECT_EQ(r.exit_code, 2) << testing::PrintToString(args) << "\n" << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(MemCli, BadInputIsOneLineAndExitTwo) {
  expect_bad_input({"mem", "replay", "/no/such/file"}, "/no/such/file: no such file");
  expect_bad_input({"mem", "advise", "/no/such/file"}, "no such file");
  expect_bad_input({"mem", "explain", "/no/such/file"}, "no such file");
  expect_bad_input({"mem", "replay", k_example, "--conf", "max_split_size_mb:5"},
                   "invalid value '5' for max_split_size_mb");
  expect_bad_input({"mem", "replay", k_example, "--conf", "bogus:1"}, "valid keys:");
  expect_bad_input({"mem", "replay", k_example, "--policy", "fast"}, "unknown policy 'fast'");
  expect_bad_input({"mem", "replay", k_example, "--device", "7"}, "--device 7 has no data");
  expect_bad_input({"mem", "replay", k_example, "--capacity", "12 parsecs"}, "unknown unit 'parsecs'");
  expect_bad_input({"mem", "replay", k_data + "evil_global_p2.pickle"}, "GLOBAL");
  expect_bad_input({"mem", "replay", KEEL_SOURCE_DIR}, "is a directory");
  expect_bad_input({"mem", "synth", "dream", "--out", "x.pickle"}, "unknown workload 'dream'");
}

TEST(MemCli, ReplayJsonContract) {
  const process_result r = run_keel({"mem", "replay", k_example, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"policy", "device", "events", "peak_allocated", "peak_reserved",
                          "fragmentation", "ooms", "fidelity", "elapsed_ms"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["policy"], "pytorch");
  EXPECT_EQ(j["fidelity"]["matched"], j["fidelity"]["recorded_segments"]);
  EXPECT_TRUE(j["fidelity"]["first_mismatch"].is_null());
  EXPECT_GT(j["peak_reserved"].get<double>(), j["peak_allocated"].get<double>());
}

TEST(MemCli, ReplayUnderACapacityReportsOoms) {
  const process_result r = run_keel({"mem", "replay", k_example, "--capacity", "2GiB", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["ooms"].empty());
  EXPECT_EQ(j["ooms"][0]["message"].get<std::string>().rfind("CUDA out of memory.", 0), 0u);
}

TEST(MemCli, AdviseJsonContract) {
  const process_result r = run_keel({"mem", "advise", k_example, "--json", "--capacity", "8GiB"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["candidates"].is_array());
  EXPECT_GE(j["candidates"].size(), 10u);
  for (const auto& c : j["candidates"]) {
    for (const char* key : {"conf", "policy", "peak_reserved", "fragmentation", "oom"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
  }
  EXPECT_EQ(j["best"]["oom"], false);
  EXPECT_EQ(j["best"]["policy"], "keel");
}

TEST(MemCli, ExplainSaysWhereTheMemoryWas) {
  const process_result r = run_keel({"mem", "explain", k_example, "--capacity", "5.5GiB", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["found"], true);
  EXPECT_GT(j["request"].get<double>(), 0);
  EXPECT_NE(j["text"].get<std::string>().find("largest free block"), std::string::npos);
  const process_result none = run_keel({"mem", "explain", k_example});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_NE(none.out.find("records no OOM"), std::string::npos);
}

TEST(MemCli, SynthWritesAReplayableSnapshot) {
  const std::string out = testing::TempDir() + "keel-synth-infer.json";
  const process_result w = run_keel({"mem", "synth", "infer", "--steps", "2", "--layers", "2", "--out", out});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const process_result r = run_keel({"mem", "replay", out, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["events"].get<int>(), 100);
}

TEST(MemCli, HtmlReportRendersInHeadlessChromium) {
  if (!std::filesystem::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed";
  const std::string dir = testing::TempDir() + "keel-html/";
  std::filesystem::create_directories(dir);
  const process_result r = run_keel({"mem", "advise", k_example, "--html", dir + "report.html"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ofstream(dir + "blank.html") << "<!DOCTYPE html><html><body></body></html>\n";
  const auto shoot = [&](const std::string& page, const std::string& png) {
    return run_process({"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-quic", "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        "--user-data-dir=" + dir + "profile", "--hide-scrollbars",
                        "--window-size=1000,900", "--screenshot=" + dir + png, "file://" + dir + page});
  };
  shoot("report.html", "report.png");
  shoot("blank.html", "blank.png");
  ASSERT_TRUE(std::filesystem::exists(dir + "report.png"));
  ASSERT_TRUE(std::filesystem::exists(dir + "blank.png"));
  // A blank page compresses to almost nothing; the charts and tables do not.
  const auto report = std::filesystem::file_size(dir + "report.png");
  const auto blank = std::filesystem::file_size(dir + "blank.png");
  EXPECT_GT(report, 10 * blank) << report << " vs " << blank;
  EXPECT_GT(report, 20'000u);
}

}  // namespace
}  // namespace keel::test
