#include "keel/comm/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>
#include <sstream>
#include <string_view>
#include <thread>

#include "keel/core/error.hpp"
#include "net.hpp"
#include "store_protocol.hpp"

extern char** environ;

namespace keel::comm {
namespace {

// argv0 as execve needs it: a name without '/' is looked up in this process's PATH, as
// posix_spawnp and the shell do. Throws keel::io_error when there is no such program.
std::string find_program(const std::string& argv0) {
  if (argv0.find('/') != std::string::npos) return argv0;
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  int first_error = ENOENT;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = end == start ? std::string(".") : dirs.substr(start, end - start);
    std::string candidate = dir;
    candidate.append("/").append(argv0);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      first_error = EACCES;
    }
    start = end + 1;
  }
  throw keel::io_error(fmt::format("{}: cannot start: {}", argv0, std::strerror(first_error)));
}

std::uint16_t free_port() {
  std::uint16_t port = 0;
  const int fd = net::listen_on("127.0.0.1", 0, port);
  ::close(fd);
  return port;
}

}  // namespace

local_job::local_job(int ranks, std::vector<std::string> argv,
                     const std::map<std::string, std::string>& env, std::string log_dir,
                     bool bind) {
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
  // The rest of what torchrun sets for a single-node job, so that a torch script reading it
  // (torch.distributed.elastic's role and group variables) runs unchanged. Like torchrun,
  // one OpenMP thread per rank unless the user chose: N ranks with a thread per core each
  // would oversubscribe the machine N times.
  base["GROUP_RANK"] = "0";
  base["GROUP_WORLD_SIZE"] = "1";
  base["ROLE_NAME"] = "default";
  base["ROLE_WORLD_SIZE"] = std::to_string(ranks);
  base["TORCHELASTIC_RUN_ID"] = id_;
  base["TORCHELASTIC_RESTART_COUNT"] = "0";
  base["TORCHELASTIC_MAX_RESTARTS"] = "0";
  if (ranks > 1 && base.find("OMP_NUM_THREADS") == base.end()) base["OMP_NUM_THREADS"] = "1";
  // The job's store secret: the user's when the environment has one, else a fresh one.
  if (auto it = base.find("KEEL_STORE_SECRET"); it == base.end() || it->second.empty()) {
    base["KEEL_STORE_SECRET"] = detail::random_hex(16);
  }
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
  // posix_spawnp's lookup, done here: after fork() the child may only make system calls.
  const std::string program = find_program(argv[0]);
  const pid_t launcher = ::getpid();
  for (int r = 0; r < ranks; ++r) {
    base["RANK"] = std::to_string(r);
    base["LOCAL_RANK"] = std::to_string(r);
    base["ROLE_RANK"] = std::to_string(r);
    std::vector<std::string> env_strings;
    env_strings.reserve(base.size());
    for (const auto& [k, v] : base) env_strings.push_back(fmt::format("{}={}", k, v));
    std::vector<char*> envp, args;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const std::string log =
        log_dir.empty() ? std::string() : fmt::format("{}/rank-{}.log", log_dir, r);
    const int cpu = allowed.empty() ? -1 : allowed[static_cast<std::size_t>(r)];
    cpu_set_t one;
    CPU_ZERO(&one);
    if (cpu >= 0) CPU_SET(cpu, &one);
    // exec's failure comes back through a close-on-exec pipe: EOF means the exec happened.
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) {
      kill_started();
      throw keel::io_error(
          fmt::format("{}: cannot start: pipe: {}", argv[0], std::strerror(errno)));
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      // The child: async-signal-safe calls only. Die with the launcher: the kernel sends
      // SIGKILL when the thread that forked us exits; if the launcher died before that was
      // armed, we were already reparented, so check.
      ::close(report[0]);
      int err = 0;
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) err = errno;
      if (err == 0 && ::getppid() != launcher) ::_exit(128 + SIGKILL);
      if (err == 0 && !log.empty()) {
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) err = errno;
        if (fd >= 0) ::close(fd);
      }
      // Pinned before exec, so the rank's first instruction already runs on its CPU.
      // (Best effort, as before: a rank that cannot be pinned runs unpinned.)
      if (err == 0 && cpu >= 0) ::sched_setaffinity(0, sizeof one, &one);
      if (err == 0) {
        ::execve(program.c_str(), args.data(), envp.data());
        err = errno;
      }
      [[maybe_unused]] auto n = ::write(report[1], &err, sizeof err);
      ::_exit(127);
    }
    const int fork_errno = errno;
    ::close(report[1]);
    if (pid < 0) {
      ::close(report[0]);
      kill_started();
      throw keel::io_error(
          fmt::format("{}: cannot start: fork: {}", argv[0], std::strerror(fork_errno)));
    }
    int child_errno = 0;
    ssize_t got = 0;
    do {
      got = ::read(report[0], &child_errno, sizeof child_errno);
    } while (got < 0 && errno == EINTR);
    ::close(report[0]);
    if (got > 0) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      kill_started();
      throw keel::io_error(
          fmt::format("{}: cannot start: {}", argv[0], std::strerror(child_errno)));
    }
    pids_.push_back(pid);
    done_.push_back(false);
    cpus_.push_back(cpu);
  }
}

void local_job::kill_started() noexcept {
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    if (!done_[i]) ::kill(pids_[i], SIGKILL);
  }
  try {
    wait(std::chrono::milliseconds(0));
  } catch (...) {
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
      exits[i].code = pid < 0             ? -1
                      : WIFEXITED(status) ? WEXITSTATUS(status)
                                          : 128 + WTERMSIG(status);
      exits[i].seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      if (exits[i].code != 0 && !failed) {
        failed = true;
        kill_at = std::min(kill_at, std::chrono::steady_clock::now() + grace);
      }
    }
    if (reaped) continue;
    if (!killed && std::chrono::steady_clock::now() >= kill_at) {
      if (limit.count() > 0 && std::chrono::steady_clock::now() >= start_ + limit)
        timed_out_ = true;
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

namespace {
volatile std::sig_atomic_t g_job_ranks = 0;
pid_t g_job_pids[1024];

extern "C" void kill_job_and_die(int sig) {
  for (std::sig_atomic_t i = 0; i < g_job_ranks; ++i) ::kill(g_job_pids[i], SIGKILL);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
}  // namespace

job_signal_guard::job_signal_guard(const local_job& job) {
  const auto& pids = job.pids();
  const std::size_t n = std::min<std::size_t>(pids.size(), std::size(g_job_pids));
  for (std::size_t i = 0; i < n; ++i) g_job_pids[i] = pids[i];
  g_job_ranks = static_cast<std::sig_atomic_t>(n);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, kill_job_and_die);
}

job_signal_guard::~job_signal_guard() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
  g_job_ranks = 0;
}

int run_local_job(int ranks, const std::vector<std::string>& argv, bool bind,
                  std::chrono::milliseconds grace) {
  local_job job(ranks, argv, {}, {}, bind);
  job_signal_guard guard(job);
  return job_exit_code(job.wait(grace));
}

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw keel::io_error("cannot find the keel executable (/proc/self/exe)");
  return p.string();
}

std::vector<std::string> without_option(std::vector<std::string> args,
                                        const std::string& short_name,
                                        const std::string& long_name) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == short_name || args[i] == long_name) {
      args.erase(args.begin() + static_cast<long>(i),
                 args.begin() + static_cast<long>(std::min(i + 2, args.size())));
      break;
    }
    if (args[i].rfind(long_name + "=", 0) == 0 ||
        (args[i].rfind(short_name, 0) == 0 && args[i].size() > short_name.size())) {
      args.erase(args.begin() + static_cast<long>(i));
      break;
    }
  }
  return args;
}

std::vector<int> parse_rank_list(const std::string& text) {
  const auto bad = [&] {
    return keel::invalid_argument(fmt::format("rank list '{}': expected e.g. 1-4 or 2,4,8", text));
  };
  // A whole decimal number (std::from_chars: no sign, space or trailing text accepted).
  const auto number = [&](std::string_view s) {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) throw bad();
    return v;
  };
  std::vector<int> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(part));
    } else {
      const std::string_view p(part);
      const int hi = number(p.substr(dash + 1));
      for (int r = number(p.substr(0, dash)); r <= hi && r <= 256; ++r) out.push_back(r);
      if (hi > 256) out.push_back(hi);  // reported as out of range below
    }
  }
  for (int r : out) {
    if (r < 1 || r > 256)
      throw keel::invalid_argument(fmt::format("rank count {} outside [1, 256]", r));
  }
  if (out.empty()) throw keel::invalid_argument("empty rank list");
  return out;
}

}  // namespace keel::comm
