// Ranks as real processes, through the `keel` CLI: launch, verify (the quick slice over shm
// and TCP), bench's nccl-tests table and JSON, the kill -9 fault trials, and bad input.
// Every run has a deadline; past it the CLI and all its ranks are killed and the test fails.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "process.hpp"

namespace keel::comm {
namespace {

// Runs `keel ARGS`; a run still going after `seconds` is killed (with its ranks) and fails.
keel::test::process_result run_keel(const std::vector<std::string>& args, double seconds = 60) {
  auto r = keel::test::run_keel(args, seconds);
  EXPECT_FALSE(r.timed_out) << "keel was still running after " << seconds << " s: " << r.out
                            << r.err;
  return r;
}

TEST(CommProcess, LaunchSetsTorchrunVariables) {
  const auto r = run_keel({"comm", "launch", "-n", "3", "--", "/bin/sh", "-c",
                           "echo $RANK/$WORLD_SIZE/$LOCAL_RANK/$MASTER_ADDR"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(r.out.find(std::to_string(i) + "/3/" + std::to_string(i) + "/127.0.0.1"),
              std::string::npos)
        << r.out;
  }
}

TEST(CommProcess, LaunchReportsTheFailingRank) {
  const auto r = run_keel({"comm", "launch", "-n", "2", "--grace", "1", "--", "/bin/sh", "-c",
                           "[ $RANK = 1 ] && exit 7; sleep 30"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_NE(r.err.find("rank 1 exited with 7"), std::string::npos) << r.err;
}

TEST(CommProcess, LaunchTimeoutKillsAHungJob) {
  const auto r = run_keel(
      {"comm", "launch", "-n", "2", "--timeout", "0.5", "--", "/bin/sh", "-c", "exec sleep 30"},
      20);
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_NE(r.err.find("job still running after 0.5 s, killed"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 10.0);
}

TEST(CommProcess, SigtermToTheLauncherKillsItsRanks) {
  // A launcher (in the background of a shell) starts 2 ranks that would sleep for 30 s and
  // record their pids; SIGTERM to the launcher alone must take the ranks down with it.
  const auto dir =
      std::filesystem::temp_directory_path() / ("keel-comm-sigterm-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string d = dir.string();
  const std::string script =
      std::string(KEEL_CLI_PATH) + " comm launch -n 2 -- /bin/sh -c 'echo $$ > " + d +
      "/$RANK.pid; exec sleep 30' & L=$!; sleep 1; kill -TERM $L; wait $L; echo launcher=$?; "
      "sleep 0.3; for f in " +
      d +
      "/*.pid; do p=$(cat $f); "
      "if grep -q 'State:.*[RSD]' /proc/$p/status 2>/dev/null; then echo running $p; fi; done";
  const auto r =
      run_keel({"comm", "launch", "-n", "1", "--bind", "none", "--", "/bin/sh", "-c", script}, 30);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("launcher=143"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find("running"), std::string::npos) << r.out;
}

TEST(CommProcess, LaunchPinsRanksToOneCpuUnlessToldNot) {
  auto allowed = [](const std::string& out) {
    const auto pos = out.find("Cpus_allowed_list:");
    return pos == std::string::npos ? std::string("?")
                                    : out.substr(pos + 18, out.find('\n', pos) - pos - 18);
  };
  const std::vector<std::string> show{"--", "/bin/sh", "-c",
                                      "grep Cpus_allowed_list /proc/self/status"};
  std::vector<std::string> args{"comm", "launch", "-n", "1"};
  args.insert(args.end(), show.begin(), show.end());
  auto r = run_keel(args, 30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string pinned = allowed(r.out);
  EXPECT_EQ(pinned.find_first_of(",-"), std::string::npos) << "one CPU expected: " << r.out;
  args = {"comm", "launch", "-n", "1", "--bind", "none"};
  args.insert(args.end(), show.begin(), show.end());
  r = run_keel(args, 30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream self("/proc/self/status");
  const std::string mine((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  EXPECT_EQ(allowed(r.out), allowed(mine)) << r.out;
  r = run_keel({"comm", "launch", "-n", "1", "--bind", "socket", "--", "true"}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST(CommProcess, VerifySliceOverSharedMemory) {
  const auto r = run_keel({"comm", "verify", "-N", "1-4", "--timeout", "30"}, 110);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verify: 4 ranks (shm)"), std::string::npos) << r.out;
}

TEST(CommProcess, VerifySliceOverTcp) {
  const auto r = run_keel({"comm", "verify", "-N", "2,3", "--transport", "tcp", "--json"}, 110);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // One JSON document per rank count.
  std::size_t pos = 0;
  int documents = 0;
  while ((pos = r.out.find("\"transport\": \"tcp\"", pos)) != std::string::npos) {
    ++documents;
    ++pos;
  }
  EXPECT_EQ(documents, 2) << r.out;
}

TEST(CommProcess, BenchPrintsNcclTestsTable) {
  const auto r = run_keel({"comm", "bench", "-N", "2", "-b", "8", "-e", "32K", "-f", "8", "-n", "3",
                           "-w", "1", "--algo", "rd"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find(
          "#       size         count      type   redop    root     time   algbw   busbw #wrong"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# Out of bounds values : 0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# Avg bus bandwidth : "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("       32768          8192     float     sum      -1"), std::string::npos)
      << r.out;
}

TEST(CommProcess, BenchJsonRowsAndBusBandwidthFactor) {
  const auto r = run_keel({"comm", "bench", "-N", "3", "--op", "allgather", "-d", "int32", "-b",
                           "3K", "-e", "3K", "-n", "2", "-w", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["rows"].size(), 1u);
  const auto& row = doc["rows"][0];
  EXPECT_EQ(row["size"], 3072);
  EXPECT_EQ(row["count"], 256);  // per rank: 3 KiB / 3 ranks / 4 bytes
  EXPECT_EQ(row["wrong"], 0);
  EXPECT_NEAR(row["busbw"].get<double>(), row["algbw"].get<double>() * 2.0 / 3.0, 1e-9);
  EXPECT_TRUE(doc.contains("avg_busbw"));
}

TEST(CommProcess, KillNineDuringAllreduceFailsSurvivorsFastAndLeavesNoSegments) {
  const double timeout = 1.0;
  const auto r =
      run_keel({"comm", "faults", "-N", "3", "--trials", "3", "--timeout", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["ok_trials"], 3);
  EXPECT_EQ(doc["hangs"], 0);
  EXPECT_EQ(doc["trials_with_leftover_segments"], 0);
  EXPECT_LE(doc["worst_seconds_after_kill"].get<double>(), timeout + 1.0);
  for (const auto& trial : doc["results"]) {
    for (const auto& s : trial["survivors"]) {
      EXPECT_EQ(s["blamed_rank"], trial["victim"]) << s.dump();
    }
  }
}

TEST(CommProcess, BadInputIsAUsageError) {
  auto r = run_keel({"comm", "bench", "-N", "2", "-d", "float128"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown dtype 'float128'"), std::string::npos) << r.err;
  r = run_keel({"comm", "verify", "-N", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = run_keel({"comm", "launch", "-n", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

}  // namespace
}  // namespace keel::comm
