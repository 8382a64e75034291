#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>

extern char** environ;

namespace keel::test {

process_result run_process(const std::vector<std::string>& argv, double seconds) {
  using clock = std::chrono::steady_clock;
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::runtime_error("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // a new group led by the child
  std::vector<char*> cargs;
  for (const std::string& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);
  pid_t pid = 0;
  const auto start = clock::now();
  const int rc = ::posix_spawn(&pid, cargs[0], &actions, &attr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw std::runtime_error("cannot start " + argv[0]);
  }
  const auto deadline =
      start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  process_result result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open = 2;
  bool reaped = false;
  bool killed = false;
  int status = 0;
  clock::time_point reaped_at{};
  char buffer[65536];
  auto kill_group = [&] {
    if (!killed) ::kill(-pid, SIGKILL);
    killed = true;
  };
  while (open > 0 || !reaped) {
    if (!reaped) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        reaped = true;
        reaped_at = clock::now();
        result.seconds = std::chrono::duration<double>(reaped_at - start).count();
      }
    }
    const auto now = clock::now();
    if (now >= deadline && !killed) {
      result.timed_out = !reaped;
      kill_group();
    }
    // The child is gone but something it started still holds the pipes: give it 2 s.
    if (reaped && open > 0 && now - reaped_at > std::chrono::seconds(2)) kill_group();
    if (open == 0) {
      if (!reaped) ::usleep(1000);
      continue;
    }
    if (::poll(fds, 2, 20) < 0 && errno != EINTR) {
      kill_group();
      throw std::runtime_error("poll failed");
    }
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(f.fd, buffer, sizeof buffer);
      if (n > 0) {
        (&f == &fds[0] ? result.out : result.err).append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(f.fd);
        f.fd = -1;
        --open;
      }
    }
  }
  if (!killed) ::kill(-pid, SIGKILL);  // anything of the group still alive (normally none)
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

process_result run_keel(const std::vector<std::string>& args, double seconds) {
  std::vector<std::string> argv{KEEL_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, seconds);
}

int count_lines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  if (!text.empty() && text.back() != '\n') ++lines;
  return lines;
}

}  // namespace keel::test
