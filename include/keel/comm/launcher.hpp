// local_job — `keel comm launch`: start N ranks of a command on this machine, torchrun-style.
//
// Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, a
// free MASTER_PORT, KEEL_COMM_JOB (the job id that prefixes its shared-memory segments) and
// KEEL_STORE_SECRET (the parent's when set, else 32 fresh random hex digits: the secret that
// authenticates the ranks to rank 0's TCP store), on top of the parent's environment; and the
// rest of what torchrun sets on one node (GROUP_RANK=0, GROUP_WORLD_SIZE=1, ROLE_RANK,
// ROLE_WORLD_SIZE, ROLE_NAME, TORCHELASTIC_RUN_ID, _RESTART_COUNT, _MAX_RESTARTS, and
// OMP_NUM_THREADS=1 for more than one rank unless the parent sets it), so that torch
// scripts run under it as under torchrun.
// wait() returns when every rank exited; when one fails (non-zero exit or signal) the others
// get `grace` to notice and exit on their own, then SIGKILL. After the job, any
// /dev/shm/keel-<job>-* segment left behind by a killed rank is removed. wait() can also
// bound the whole job's run time. A convenience for tests and demos, not a cluster manager.
//
// Ranks die with the launcher: each is started with PR_SET_PDEATHSIG(SIGKILL), so when the
// launcher dies, even of SIGKILL, the kernel kills every rank (not what the ranks start
// themselves; a rank that execs keeps it, a setuid program loses it). The signal fires when
// the *thread* that constructed the local_job exits: construct it on a thread that outlives
// the job (the main thread, as `keel comm launch` does).
// Not thread-safe; one object per job.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace keel::comm {

struct rank_exit {
  int rank = -1;
  int code = -1;       // exit status, or 128 + signal
  double seconds = 0;  // since start
};

class local_job {
 public:
  // argv[0] is looked up in PATH when it contains no '/'. Throws keel::invalid_argument
  // for ranks < 1 or an empty command, keel::io_error when it cannot be started.
  // log_dir non-empty: rank r's stdout and stderr go to log_dir/rank-r.log.
  // bind: when there are no more ranks than CPUs this process may run on, pin rank r to the
  // r-th of them (Open MPI's default binding): two busy-polling ranks then never share a
  // CPU. With more ranks than CPUs nothing is pinned.
  local_job(int ranks, std::vector<std::string> argv,
            const std::map<std::string, std::string>& env = {}, std::string log_dir = {},
            bool bind = false);
  ~local_job();  // kills ranks still running
  local_job(const local_job&) = delete;
  local_job& operator=(const local_job&) = delete;

  const std::string& id() const noexcept { return id_; }
  const std::vector<pid_t>& pids() const noexcept { return pids_; }
  // The CPU rank r was pinned to, or -1.
  const std::vector<int>& cpus() const noexcept { return cpus_; }
  // Waits for all ranks; returns their exits in rank order. cleanup: remove the job's
  // leftover segments afterwards (tests that count leftovers pass false first). limit > 0:
  // ranks still running that long after the start are killed (SIGKILL, code 137) and
  // timed_out() becomes true.
  std::vector<rank_exit> wait(std::chrono::milliseconds grace, bool cleanup = true,
                              std::chrono::milliseconds limit = std::chrono::milliseconds(0));
  bool timed_out() const noexcept { return timed_out_; }
  // Shared-memory segments of this job present now (names under /dev/shm).
  std::vector<std::string> leftover_segments() const;

 private:
  void kill_started() noexcept;  // a later rank could not start: SIGKILL and reap the others
  std::string id_;
  std::vector<pid_t> pids_;
  std::vector<int> cpus_;
  std::vector<bool> done_;
  std::chrono::steady_clock::time_point start_;
  bool timed_out_ = false;
};

// The exit code a launcher reports for a job: 0 when all succeeded, else the first failing
// rank's code.
int job_exit_code(const std::vector<rank_exit>& exits);

// While one lives, SIGINT, SIGTERM and SIGHUP to this process SIGKILL the job's ranks (the
// first 1024) and then kill this process with the same signal as usual: an interrupted or
// timed-out launcher leaves no ranks behind. One at a time per process; construct and
// destroy it on the thread that owns the job.
class job_signal_guard {
 public:
  explicit job_signal_guard(const local_job& job);
  ~job_signal_guard();
  job_signal_guard(const job_signal_guard&) = delete;
  job_signal_guard& operator=(const job_signal_guard&) = delete;
};

// Runs `argv` as `ranks` local ranks under a job_signal_guard and returns job_exit_code of
// the job (grace as in local_job::wait). Throws what local_job's constructor throws.
int run_local_job(int ranks, const std::vector<std::string>& argv, bool bind,
                  std::chrono::milliseconds grace);

// The path of the running executable (/proc/self/exe); throws keel::io_error without one.
std::string self_executable();
// `args` without the first occurrence of an option and its value: "-N 4", "--ranks 4",
// "--ranks=4" or "-N4" for short "-N" and long "--ranks".
std::vector<std::string> without_option(std::vector<std::string> args,
                                        const std::string& short_name,
                                        const std::string& long_name);

// Rank counts such as "1-4" or "2,4,8" (ranges inclusive; each number whole decimal digits,
// no sign, space or suffix). Throws keel::invalid_argument for text that is not such a
// list, an empty list, or a count outside [1, 256].
std::vector<int> parse_rank_list(const std::string& text);

}  // namespace keel::comm
