// The launchers and the store's secret, as real processes: every rank of `keel comm launch`
// gets the same fresh KEEL_STORE_SECRET (or the user's), a rank with another secret fails
// naming it, and kill -9 of `keel comm launch` or `keel comm bench -N` takes every rank
// along within seconds, leaving nothing in /dev/shm.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "keel/comm/launcher.hpp"
#include "keel/core/error.hpp"
#include "process.hpp"

extern char** environ;

namespace keel::comm {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// The whole file, or what could be read of it: a /proc entry whose process exits while it
// is read fails with ESRCH (which std::ifstream turns into an exception).
std::string read_file(const std::filesystem::path& p) {
  std::string out;
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

// Running and not a zombie (a rank reparented to a PID 1 that does not reap stays a zombie).
bool alive(pid_t pid) {
  const std::string status = read_file(fmt::format("/proc/{}/status", pid));
  const auto pos = status.find("State:");
  if (pos == std::string::npos) return false;
  const char state = status[status.find_first_not_of(" \t", pos + 6)];
  return state != 'Z' && state != 'X';
}

// The pids whose parent is `parent`.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file(entry.path() / "stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// A variable of another process's environment ("" when unreadable).
std::string environment_of(pid_t pid, const std::string& name) {
  const std::string env = read_file(fmt::format("/proc/{}/environ", pid));
  std::size_t start = 0;
  while (start < env.size()) {
    const std::size_t end = env.find('\0', start);
    const std::string kv = env.substr(start, end - start);
    if (kv.rfind(name + "=", 0) == 0) return kv.substr(name.size() + 1);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

// Whether some socket of this network namespace listens on TCP `port` (/proc/net/tcp).
bool listening_on(int port) {
  std::istringstream table(read_file("/proc/net/tcp"));
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    const auto colon = local.find(':');
    if (colon == std::string::npos) continue;
    if (std::stoi(local.substr(colon + 1), nullptr, 16) == port && state == "0A") return true;
  }
  return false;
}

// Starts `keel ARGS` in a process group of its own, output to `out`, with `extra_env` added
// to this process's environment.
pid_t start_keel(const std::vector<std::string>& args, const std::string& out,
                 const std::vector<std::string>& extra_env = {}) {
  std::vector<std::string> argv{KEEL_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargs;
  for (auto& a : argv) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> env_strings = extra_env;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, cargs[0], &actions, &attr, cargs.data(), envp.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return pid;
}

struct kill_result {
  std::size_t ranks = 0;
  double seconds_until_gone = -1;  // -1: some rank still ran after the limit
  std::vector<std::string> leftover_segments;
  std::string output;
  bool store_listening = false;  // rank 0's MASTER_PORT, once ready
};

// Starts a launcher, waits until `ready(output)` and its `ranks` children run, kill -9's the
// launcher alone and times how long its ranks outlive it.
kill_result kill_nine_the_launcher(const std::vector<std::string>& args, std::size_t ranks,
                                   const std::function<bool(const std::string&)>& ready,
                                   const std::vector<std::string>& extra_env = {}) {
  kill_result result;
  const auto dir =
      std::filesystem::temp_directory_path() /
      fmt::format("keel-comm-kill9-{}-{}", ::getpid(), steady::now().time_since_epoch().count());
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "out.log").string();
  const pid_t launcher = start_keel(args, out, extra_env);
  EXPECT_GT(launcher, 0);
  if (launcher <= 0) return result;
  std::vector<pid_t> pids;
  const auto ready_deadline = steady::now() + 60s;
  while (steady::now() < ready_deadline) {
    pids = children_of(launcher);
    if (pids.size() == ranks && ready(read_file(out))) break;
    std::this_thread::sleep_for(20ms);
  }
  result.ranks = pids.size();
  const std::string job = pids.empty() ? std::string() : environment_of(pids[0], "KEEL_COMM_JOB");
  const std::string port = pids.empty() ? std::string() : environment_of(pids[0], "MASTER_PORT");
  result.store_listening = !port.empty() && listening_on(std::stoi(port));
  ::kill(launcher, SIGKILL);
  const auto killed = steady::now();
  int status = 0;
  ::waitpid(launcher, &status, 0);
  while (steady::now() - killed < 10s) {
    bool any = false;
    for (pid_t p : pids) any = any || alive(p);
    if (!any) {
      result.seconds_until_gone = std::chrono::duration<double>(steady::now() - killed).count();
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  ::kill(-launcher, SIGKILL);  // whatever survived: do not leak it into the next test
  std::error_code ec;
  if (!job.empty()) {
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("keel-" + job + "-", 0) == 0) result.leftover_segments.push_back(name);
    }
  }
  for (const auto& name : result.leftover_segments) std::filesystem::remove("/dev/shm/" + name, ec);
  result.output = read_file(out);
  std::filesystem::remove_all(dir, ec);
  return result;
}

TEST(CommLauncher, EveryRankGetsTheSameFreshSecret) {
  std::set<std::string> secrets;
  for (int job = 0; job < 2; ++job) {
    const auto r = keel::test::run_keel(
        {"comm", "launch", "-n", "3", "--", "/bin/sh", "-c", "echo secret=$KEEL_STORE_SECRET"}, 30);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> mine;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("secret=", 0) == 0) mine.insert(line.substr(7));
    }
    ASSERT_EQ(mine.size(), 1u) << "ranks of one job disagree: " << r.out;
    EXPECT_EQ(mine.begin()->size(), 32u) << r.out;
    EXPECT_EQ(mine.begin()->find_first_not_of("0123456789abcdef"), std::string::npos);
    secrets.insert(*mine.begin());
  }
  EXPECT_EQ(secrets.size(), 2u) << "two jobs got the same secret";
}

TEST(CommLauncher, KeepsTheUsersSecret) {
  const auto r = keel::test::run_process(
      {"/bin/sh", "-c",
       std::string("KEEL_STORE_SECRET=mine-mine-mine-mine ") + KEEL_CLI_PATH +
           " comm launch -n 2 -- /bin/sh -c 'echo secret=$KEEL_STORE_SECRET'"},
      30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(keel::test::count_lines(r.out), 2) << r.out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) EXPECT_EQ(line, "secret=mine-mine-mine-mine");
}

TEST(CommLauncher, RanksWithDifferentSecretsFailNamingTheCause) {
  // Rank 1 brings a secret of its own: it must be refused by rank 0's store with a message
  // that says so, and the job must end (rank 0 is killed after the grace period).
  const std::string script =
      std::string("[ $RANK = 1 ] && export KEEL_STORE_SECRET=not-the-jobs-secret; exec ") +
      KEEL_CLI_PATH + " comm bench -b 8 -e 8 -n 1 -w 0 --timeout 20";
  const auto r = keel::test::run_keel(
      {"comm", "launch", "-n", "2", "--grace", "1", "--", "/bin/sh", "-c", script}, 60);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("refused this rank: its KEEL_STORE_SECRET differs from rank 0's"),
            std::string::npos)
      << r.err;
  EXPECT_LT(r.seconds, 15.0);
  // A secret too short to be one is a usage error on every rank.
  const auto s = keel::test::run_process({"/bin/sh", "-c",
                                          std::string("KEEL_STORE_SECRET=short ") + KEEL_CLI_PATH +
                                              " comm bench -N 2 -b 8 -e 8 -n 1 -w 0 --timeout 20"},
                                         60);
  EXPECT_NE(s.exit_code, 0);
  EXPECT_NE(s.err.find("KEEL_STORE_SECRET has 5 characters: use at least 16"), std::string::npos)
      << s.err;
}

TEST(CommLauncher, KillNineOfLaunchTakesItsRanksAlong) {
  const auto r = kill_nine_the_launcher(
      {"comm", "launch", "-n", "3", "--bind", "none", "--", "/bin/sh", "-c",
       "echo ready; exec sleep 60"},
      3, [](const std::string& out) { return keel::test::count_lines(out) >= 3; });
  ASSERT_EQ(r.ranks, 3u) << r.output;
  std::cout << fmt::format("[ kill -9  ] comm launch: 3 ranks gone {:.3f} s after the launcher\n",
                           r.seconds_until_gone);
  EXPECT_GE(r.seconds_until_gone, 0) << "ranks outlived their launcher by 10 s";
  EXPECT_LT(r.seconds_until_gone, 3.0);
}

TEST(CommLauncher, KillNineOfBenchTakesItsRanksAlongAndLeavesNoSegments) {
  // Ranks that loop on allreduce over shared memory (about 460 sizes); rank 0 has printed a
  // row, so every segment has been mapped and unlinked.
  const auto r = kill_nine_the_launcher(
      {"comm", "bench", "-N", "3",    "--bind", "none", "-b", "8", "-e",        "4096",
       "-f",   "1.01",  "-n", "2000", "-w",     "0",    "-c", "0", "--timeout", "60"},
      3, [](const std::string& out) { return out.find("   float     sum") != std::string::npos; });
  ASSERT_EQ(r.ranks, 3u) << r.output;
  std::cout << fmt::format("[ kill -9  ] comm bench -N 3: ranks gone {:.3f} s after the launcher\n",
                           r.seconds_until_gone);
  EXPECT_GE(r.seconds_until_gone, 0) << "ranks outlived their launcher by 10 s: " << r.output;
  EXPECT_LT(r.seconds_until_gone, 3.0);
  std::string left;
  for (const auto& name : r.leftover_segments) left += name + " ";
  EXPECT_TRUE(r.leftover_segments.empty()) << left;
  EXPECT_FALSE(r.store_listening) << "rank 0's store still listens after bootstrap";
}

TEST(CommLauncher, StoreListensAfterBootstrapOnlyWhenKept) {
  const std::vector<std::string> bench{"comm", "bench", "-N",   "2",  "--bind",    "none", "-b",
                                       "8",    "-e",    "4096", "-f", "1.01",      "-n",   "2000",
                                       "-w",   "0",     "-c",   "0",  "--timeout", "60"};
  const auto row = [](const std::string& out) {
    return out.find("   float     sum") != std::string::npos;
  };
  const auto kept = kill_nine_the_launcher(bench, 2, row, {"KEEL_STORE_KEEP=1"});
  ASSERT_EQ(kept.ranks, 2u) << kept.output;
  EXPECT_TRUE(kept.store_listening);
  const auto closed = kill_nine_the_launcher(bench, 2, row);
  ASSERT_EQ(closed.ranks, 2u) << closed.output;
  EXPECT_FALSE(closed.store_listening);
}

TEST(CommLauncherArgs, WithoutOptionDropsTheFirstOccurrenceInEveryForm) {
  using v = std::vector<std::string>;
  EXPECT_EQ(without_option({"comm", "bench", "-N", "4", "-e", "1M"}, "-N", "--ranks"),
            (v{"comm", "bench", "-e", "1M"}));
  EXPECT_EQ(without_option({"bench", "--ranks", "4"}, "-N", "--ranks"), (v{"bench"}));
  EXPECT_EQ(without_option({"bench", "--ranks=4", "-N", "2"}, "-N", "--ranks"),
            (v{"bench", "-N", "2"}));
  EXPECT_EQ(without_option({"bench", "-N4"}, "-N", "--ranks"), (v{"bench"}));
  EXPECT_EQ(without_option({"bench", "-N"}, "-N", "--ranks"), (v{"bench"}));
  EXPECT_EQ(without_option({"bench", "-e", "8"}, "-N", "--ranks"), (v{"bench", "-e", "8"}));
}

TEST(CommLauncherArgs, RankListsAreRangesAndCommas) {
  EXPECT_EQ(parse_rank_list("1-4"), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(parse_rank_list("2,8"), (std::vector<int>{2, 8}));
  EXPECT_EQ(parse_rank_list("3,1-2"), (std::vector<int>{3, 1, 2}));
  EXPECT_THROW(parse_rank_list(""), keel::invalid_argument);
  EXPECT_THROW(parse_rank_list("x"), keel::invalid_argument);
  // Whole numbers only: std::stoi would have read these as 4, 2 and 1.
  EXPECT_THROW(parse_rank_list("1-4x"), keel::invalid_argument);
  EXPECT_THROW(parse_rank_list(" 2"), keel::invalid_argument);
  EXPECT_THROW(parse_rank_list("1.5"), keel::invalid_argument);
  EXPECT_THROW(parse_rank_list("1-99999999999"), keel::invalid_argument);
  EXPECT_THROW(parse_rank_list("0"), keel::invalid_argument);
  EXPECT_THROW(parse_rank_list("1-257"), keel::invalid_argument);
}

TEST(CommLauncherArgs, SelfExecutableIsThisProgram) {
  EXPECT_TRUE(std::filesystem::exists(self_executable()));
  EXPECT_EQ(std::filesystem::path(self_executable()).filename(),
            std::filesystem::path(::testing::internal::GetArgvs()[0]).filename());
}

TEST(CommLauncherArgs, RunLocalJobReportsTheFirstFailingRank) {
  EXPECT_EQ(run_local_job(2, {"true"}, false, 1s), 0);
  // The first failure in time is reported: rank 1 fails at once, rank 0 two seconds later
  // (rank order would say 3). Racing both to fail at once made this flaky under load.
  EXPECT_EQ(
      run_local_job(2, {"sh", "-c", "[ \"$RANK\" = 1 ] && exit 4; sleep 2; exit 3"}, false, 5s), 4);
}

}  // namespace
}  // namespace keel::comm
