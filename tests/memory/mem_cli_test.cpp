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
  expect_bad_input({"mem", "replay", k_example, "--capacity", "12 parsecs"},
                   "unknown unit 'parsecs'");
  expect_bad_input({"mem", "replay", k_data + "evil_global_p2.pickle"}, "GLOBAL");
  expect_bad_input({"mem", "replay", KEEL_SOURCE_DIR}, "is a directory");
  expect_bad_input({"mem", "synth", "dream", "--out", "x.pickle"}, "unknown workload 'dream'");
}

TEST(MemCli, ReplayJsonContract) {
  const process_result r = run_keel({"mem", "replay", k_example, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["devices"].size(), 1u);
  const auto& j = doc["devices"][0];
  for (const char* key :
       {"policy", "device", "events", "peak_allocated", "peak_reserved", "recorded_peak_reserved",
        "fragmentation", "ooms", "fidelity", "start", "capacity", "elapsed_ms"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["policy"], "pytorch");
  EXPECT_EQ(j["start"], "window");
  EXPECT_EQ(j["fidelity"]["exact"], true);
  EXPECT_EQ(j["fidelity"]["matched"], j["fidelity"]["recorded_segments"]);
  EXPECT_TRUE(j["fidelity"]["first_mismatch"].is_null());
  EXPECT_EQ(j["peak_reserved"], j["recorded_peak_reserved"]);
  EXPECT_GT(j["peak_reserved"].get<double>(), j["peak_allocated"].get<double>());
}

TEST(MemCli, ReplayUnderACapacityStopsAtTheFirstOom) {
  const process_result r = run_keel({"mem", "replay", k_example, "--capacity", "2GiB", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& j = doc["devices"][0];
  ASSERT_EQ(j["ooms"].size(), 1u);
  EXPECT_EQ(j["stopped_at_oom"], true);
  EXPECT_EQ(j["ooms"][0]["message"].get<std::string>().rfind("CUDA out of memory.", 0), 0u);
  const process_result text =
      run_keel({"mem", "replay", k_example, "--capacity", "2GiB", "--continue-after-oom"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_LE(count_lines(text.out), 40) << text.out;  // repeated OOMs do not flood the terminal
  const process_result tiny = run_keel({"mem", "replay", k_example, "--capacity", "1MiB"});
  EXPECT_EQ(tiny.exit_code, 0) << tiny.err;
}

TEST(MemCli, AdviseJsonContract) {
  const process_result r = run_keel({"mem", "advise", k_example, "--json", "--capacity", "8GiB"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "keel.mem.analysis/1");
  const auto& d = j["devices"][0];
  ASSERT_EQ(d["modes"].size(), 2u);
  for (const auto& mode : d["modes"]) {
    EXPECT_GE(mode["candidates"].size(), 10u);
    for (const auto& c : mode["candidates"]) {
      for (const char* key : {"conf", "policy", "env", "peak_reserved", "saving", "fragmentation",
                              "oom", "timeline"}) {
        EXPECT_TRUE(c.contains(key)) << key;
      }
      EXPECT_EQ(c["saving"].get<std::int64_t>(),
                d["recorded"]["peak_reserved"].get<std::int64_t>() -
                    c["peak_reserved"].get<std::int64_t>());
    }
  }
  ASSERT_FALSE(d["recommendation"].is_null()) << d["verdict"];
  EXPECT_GT(d["recommendation"]["saving"].get<double>(), 0);
  EXPECT_FALSE(d["recommendation"]["steps"].empty());
}

TEST(MemCli, ExplainSaysWhereTheMemoryWas) {
  const process_result r =
      run_keel({"mem", "explain", k_example, "--capacity", "5.5GiB", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& j = doc["devices"][0];
  EXPECT_EQ(j["found"], true);
  EXPECT_GT(j["request"].get<double>(), 0);
  EXPECT_FALSE(j["class"].is_null());
  EXPECT_NE(j["text"].get<std::string>().find("device 0"), std::string::npos);
  const process_result none = run_keel({"mem", "explain", k_example});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_NE(none.out.find("records no OOM"), std::string::npos);
}

TEST(MemCli, SynthWritesAReplayableSnapshot) {
  const std::string out = testing::TempDir() + "keel-synth-infer.json";
  const process_result w =
      run_keel({"mem", "synth", "infer", "--steps", "2", "--layers", "2", "--out", out});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const process_result r = run_keel({"mem", "replay", out, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["devices"][0]["events"].get<int>(), 100);
}

TEST(MemCli, HtmlReportRendersInHeadlessChromium) {
  if (!std::filesystem::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed";
  const std::string dir = testing::TempDir() + "keel-html/";
  std::filesystem::create_directories(dir);
  const process_result r = run_keel({"mem", "advise", k_example, "--html", dir + "report.html"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ofstream(dir + "blank.html") << "<!DOCTYPE html><html><body></body></html>\n";
  const auto shoot = [&](const std::string& page, const std::string& png) {
    return run_process(
        {"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--user-data-dir=" + dir + "profile", "--hide-scrollbars",
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
