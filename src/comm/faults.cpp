#include "keel/comm/faults.hpp"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <random>
#include <sstream>
#include <thread>

#include "keel/comm/launcher.hpp"

namespace keel::comm {
namespace {

using steady = std::chrono::steady_clock;

long long realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::optional<fault_report_line> find_fault_line(std::string_view log) {
  const auto pos = log.find("ERROR ");
  if (pos == std::string_view::npos) return std::nullopt;
  std::istringstream line(std::string(log.substr(pos + 6)));
  fault_report_line r;
  line >> r.kind >> r.realtime_ns >> r.collective >> r.seq >> r.rank;
  return r;
}

void run_fault_worker(communicator& c, std::size_t count, std::ostream& out) {
  std::vector<float> a(count, 1.0f), b(count);
  for (std::uint64_t i = 0;; ++i) {
    try {
      c.allreduce(a.data(), b.data(), count, dtype::f32, reduce_op::sum);
    } catch (const comm_error& e) {
      const char* kind = dynamic_cast<const timeout_error*>(&e) ? "timeout"
                         : dynamic_cast<const peer_error*>(&e)  ? "peer"
                                                                : "other";
      out << fmt::format("ERROR {} {} {} {} {} {}\n", kind, realtime_ns(), e.collective(), e.seq(),
                         e.rank(), e.what())
          << std::flush;
      return;
    }
    if (i == 2) out << "READY\n" << std::flush;
  }
}

fault_summary run_fault_trials(const fault_options& o,
                               const std::function<void(const fault_trial&)>& on_trial) {
  std::mt19937 rng(o.seed);
  const auto logs =
      std::filesystem::temp_directory_path() / fmt::format("keel-comm-faults-{}", ::getpid());
  auto log_of = [&](int r) {
    std::ifstream in(logs / fmt::format("rank-{}.log", r));
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  fault_summary summary;
  for (int t = 0; t < o.trials; ++t) {
    std::filesystem::remove_all(logs);
    local_job job(o.ranks, o.worker, {{"KEEL_COMM_TRANSPORT", o.transport}}, logs.string());
    job_signal_guard guard(job);
    // Wait until every rank runs its loop, then kill one at a random moment.
    const auto ready_deadline = steady::now() + std::chrono::seconds(60);
    while (steady::now() < ready_deadline) {
      int ready = 0;
      for (int r = 0; r < o.ranks; ++r) ready += log_of(r).find("READY") != std::string::npos;
      if (ready == o.ranks) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(10, 300)(rng)));
    fault_trial trial;
    trial.trial = t;
    trial.victim = std::uniform_int_distribution<int>(0, o.ranks - 1)(rng);
    const long long killed_at = realtime_ns();
    ::kill(job.pids()[static_cast<std::size_t>(trial.victim)], SIGKILL);
    const auto exits =
        job.wait(std::chrono::milliseconds(static_cast<long>(o.timeout_s * 1000) + 5000), false);
    const auto leftover = job.leftover_segments();
    for (const auto& name : leftover) std::filesystem::remove("/dev/shm/" + name);
    trial.leftover_segments = leftover.size();
    trial.ok = leftover.empty();
    summary.leaks += !leftover.empty();
    for (int r = 0; r < o.ranks; ++r) {
      if (r == trial.victim) continue;
      fault_survivor s;
      s.rank = r;
      s.exit = exits[static_cast<std::size_t>(r)].code;
      const auto line = find_fault_line(log_of(r));
      if (!line || s.exit == 128 + SIGKILL) {
        s.hang = true;
        ++summary.hangs;
        trial.ok = false;
      } else {
        s.error = line->kind;
        s.seconds_after_kill = (line->realtime_ns - killed_at) / 1e9;
        s.blamed_rank = line->rank;
        s.seq = line->seq;
        summary.worst_seconds_after_kill =
            std::max(summary.worst_seconds_after_kill, s.seconds_after_kill);
        if (s.seconds_after_kill > o.timeout_s + 1.0) trial.ok = false;
      }
      trial.survivors.push_back(s);
    }
    summary.ok_trials += trial.ok;
    summary.trials.push_back(trial);
    if (on_trial) on_trial(summary.trials.back());
  }
  std::filesystem::remove_all(logs);
  return summary;
}

}  // namespace keel::comm
