// Fault injection — `keel comm faults`: kill -9 a random rank during an allreduce loop and
// time how the survivors fail (docs/comm.md, "Failure handling").
//
// A trial starts `ranks` workers (`worker`: an argv whose processes call run_fault_worker,
// `keel comm fault-worker` in the CLI) as a local_job with their output in log files, waits
// until every log says READY, sleeps 10-300 ms, SIGKILLs a random victim and waits for the
// rest. A survivor passes when its log holds an ERROR line written within timeout + 1 s of
// the kill; a trial passes when every survivor does and no shared-memory segment of the job
// is left (leftovers are removed and counted). Victim and kill time come from `seed`, so a
// run is reproducible up to scheduling. Not thread-safe (one run per process at a time: it
// installs a job_signal_guard).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/comm/communicator.hpp"

namespace keel::comm {

// The line a worker prints when its allreduce fails:
//   "ERROR <kind> <realtime ns> <collective> <seq> <rank> <message>"
struct fault_report_line {
  std::string kind;  // "timeout", "peer" or "other"
  long long realtime_ns = 0;
  std::string collective;
  std::uint64_t seq = 0;
  int rank = -1;  // the rank the error blames
};
// The first ERROR line in a worker's log, or nullopt when there is none.
std::optional<fault_report_line> find_fault_line(std::string_view log);

// One worker: allreduce `count` floats in a loop, print READY (flushed) after the third,
// and return after printing the ERROR line of the first comm_error. Other exceptions
// propagate.
void run_fault_worker(communicator& c, std::size_t count, std::ostream& out);

struct fault_options {
  int ranks = 4;    // >= 2
  int trials = 20;  // >= 1
  double timeout_s = 2;
  std::string transport = "auto";  // KEEL_COMM_TRANSPORT of the workers
  unsigned seed = 1;
  std::vector<std::string> worker;  // the worker command line
};

struct fault_survivor {
  int rank = -1;
  int exit = -1;
  bool hang = false;  // no ERROR line, or killed by the job's deadline
  std::string error;  // the ERROR line's kind
  double seconds_after_kill = 0;
  int blamed_rank = -1;
  std::uint64_t seq = 0;
};

struct fault_trial {
  int trial = 0;
  int victim = -1;
  std::size_t leftover_segments = 0;
  std::vector<fault_survivor> survivors;
  bool ok = false;
};

struct fault_summary {
  std::vector<fault_trial> trials;
  int ok_trials = 0, hangs = 0, leaks = 0;  // leaks: trials that left segments
  double worst_seconds_after_kill = 0;
};

// Runs the trials; on_trial, when set, sees each as soon as it ends. Throws what local_job
// throws.
fault_summary run_fault_trials(const fault_options& o,
                               const std::function<void(const fault_trial&)>& on_trial = {});

}  // namespace keel::comm
