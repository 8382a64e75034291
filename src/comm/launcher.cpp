#include "keel/comm/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "keel/core/error.hpp"
#include "net.hpp"

extern char** environ;

namespace keel::comm {
namespace {

std::uint16_t free_port() {
  std::uint16_t port = 0;
  const int fd = net::listen_on("127.0.0.1", 0, port);
  ::close(fd);
  return port;
}

}  // namespace

local_job::local_job(int ranks, std::vector<std::string> argv,
                     std::map<std::string, std::string> env, std::string log_dir, bool bind) {
  if (ranks < 1 || ranks > 1024) {
    throw keel::invalid_argument(fmt::format("rank count {} outside [1, 1024]", ranks));
  }
  if (argv.empty()) throw keel::invalid_argument("no command to launch");
  std::random_device rd;
  id_ = fmt::format("{:08x}", rd());
  start_ = std::chrono::steady_clock::now();
  const std::uint16_t port = free_port();
  // The parent environment minus other launchers' rank variables, plus ours.
  std::map<std::string, std::string> base;
  for (char** e = environ; *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq);
    if (key.rfind("OMPI_COMM_WORLD_", 0) == 0 || key.rfind("PMI_", 0) == 0 ||
        key == "SLURM_PROCID" || key == "SLURM_NTASKS" || key == "SLURM_LOCALID") {
      continue;
    }
    base[key] = kv.substr(eq + 1);
  }
  for (auto& [k, v] : env) base[k] = v;
  base["WORLD_SIZE"] = std::to_string(ranks);
  base["LOCAL_WORLD_SIZE"] = std::to_string(ranks);
  base["MASTER_ADDR"] = "127.0.0.1";
  base["MASTER_PORT"] = std::to_string(port);
  base["KEEL_COMM_JOB"] = id_;
  if (!log_dir.empty()) std::filesystem::create_directories(log_dir);
  std::vector<int> allowed;
  cpu_set_t inherited;
  CPU_ZERO(&inherited);
  if (bind && ::sched_getaffinity(0, sizeof inherited, &inherited) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &inherited)) allowed.push_back(c);
    }
    if (static_cast<std::size_t>(ranks) > allowed.size()) allowed.clear();
  }
  const auto pin_spawning_thread = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return ::sched_setaffinity(0, sizeof one, &one) == 0;
  };
  for (int r = 0; r < ranks; ++r) {
    base["RANK"] = std::to_string(r);
    base["LOCAL_RANK"] = std::to_string(r);
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : base) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    std::string log;
    if (!log_dir.empty()) {
      log = fmt::format("{}/rank-{}.log", log_dir, r);
      posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      posix_spawn_file_actions_adddup2(&actions, 1, 2);
    }
    // Pinned by spawning from this thread bound to the rank's CPU (a child inherits the
    // spawning thread's mask): pinning the pid after the spawn races with the rank's first steps.
    const bool pin = !allowed.empty() && pin_spawning_thread(allowed[static_cast<std::size_t>(r)]);
    pid_t pid = 0;
    const int rc = argv[0].find('/') == std::string::npos
                       ? posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data())
                       : posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (pin) ::sched_setaffinity(0, sizeof inherited, &inherited);
    if (rc != 0) {
      for (pid_t p : pids_) ::kill(p, SIGKILL);
      wait(std::chrono::milliseconds(0));
      throw keel::io_error(fmt::format("{}: cannot start: {}", argv[0], std::strerror(rc)));
    }
    pids_.push_back(pid);
    done_.push_back(false);
    cpus_.push_back(pin ? allowed[static_cast<std::size_t>(r)] : -1);
  }
}

local_job::~local_job() {
  bool running = false;
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    if (!done_[i]) {
      ::kill(pids_[i], SIGKILL);
      running = true;
    }
  }
  if (running) wait(std::chrono::milliseconds(0));
}

std::vector<rank_exit> local_job::wait(std::chrono::milliseconds grace, bool cleanup,
                                       std::chrono::milliseconds limit) {
  std::vector<rank_exit> exits(pids_.size());
  for (std::size_t i = 0; i < pids_.size(); ++i) exits[i].rank = static_cast<int>(i);
  std::size_t left = 0;
  for (bool d : done_) left += !d;
  std::chrono::steady_clock::time_point kill_at = std::chrono::steady_clock::time_point::max();
  if (limit.count() > 0) kill_at = std::min(kill_at, start_ + limit);
  bool killed = false, failed = false;
  // Sleep in poll() on the ranks' pidfds rather than waking up every few milliseconds: a
  // launcher that keeps waking up steals the CPUs of busy-polling ranks.
  std::vector<int> pidfd(pids_.size(), -1);
  bool use_pidfds = true;
  for (std::size_t i = 0; i < pids_.size() && use_pidfds; ++i) {
    if (done_[i]) continue;
    pidfd[i] = static_cast<int>(::syscall(SYS_pidfd_open, pids_[i], 0));
    use_pidfds = pidfd[i] >= 0;  // kernels before 5.3: poll every 2 ms instead
  }
  std::vector<pollfd> fds;
  while (left > 0) {
    bool reaped = false;
    for (std::size_t i = 0; i < pids_.size(); ++i) {
      if (done_[i]) continue;
      int status = 0;
      const pid_t pid = ::waitpid(pids_[i], &status, WNOHANG);
      if (pid == 0) continue;
      done_[i] = true;
      --left;
      reaped = true;
      exits[i].code = pid < 0 ? -1
                      : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      exits[i].seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      if (exits[i].code != 0 && !failed) {
        failed = true;
        kill_at = std::min(kill_at, std::chrono::steady_clock::now() + grace);
      }
    }
    if (reaped) continue;
    if (!killed && std::chrono::steady_clock::now() >= kill_at) {
      if (limit.count() > 0 && std::chrono::steady_clock::now() >= start_ + limit) timed_out_ = true;
      for (std::size_t i = 0; i < pids_.size(); ++i) {
        if (!done_[i]) ::kill(pids_[i], SIGKILL);
      }
      killed = true;
    }
    if (!use_pidfds) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    fds.clear();  // the ranks still running (an exited one's pidfd stays readable)
    for (std::size_t i = 0; i < pids_.size(); ++i) {
      if (!done_[i]) fds.push_back({pidfd[i], POLLIN, 0});
    }
    long wait_ms = 1000;
    if (!killed && kill_at != std::chrono::steady_clock::time_point::max()) {
      const auto until = std::chrono::duration_cast<std::chrono::milliseconds>(
          kill_at - std::chrono::steady_clock::now());
      wait_ms = std::clamp<long>(until.count() + 1, 1, 1000);
    }
    ::poll(fds.data(), fds.size(), static_cast<int>(wait_ms));
  }
  for (int fd : pidfd) {
    if (fd >= 0) ::close(fd);
  }
  // Segments are unlinked by the ranks once mapped; a rank killed during setup leaves its own.
  if (cleanup) {
    for (const std::string& name : leftover_segments()) std::filesystem::remove("/dev/shm/" + name);
  }
  return exits;
}

std::vector<std::string> local_job::leftover_segments() const {
  std::vector<std::string> names;
  std::error_code ec;
  const std::string prefix = "keel-" + id_ + "-";
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

int job_exit_code(const std::vector<rank_exit>& exits) {
  const rank_exit* first = nullptr;
  for (const auto& e : exits) {
    if (e.code != 0 && (first == nullptr || e.seconds < first->seconds)) first = &e;
  }
  return first ? first->code : 0;
}

}  // namespace keel::comm
