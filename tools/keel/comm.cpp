// `keel comm`: collective communication — launch ranks, verify and benchmark collectives,
// inject faults.
//   keel comm launch -n N [--grace S] [--timeout S] [--bind core|none] -- CMD ARGS
//   keel comm verify [-N LIST] [--full] ...           collectives vs a serial reference
//   keel comm bench  [nccl-tests flags] [-N N] ...    nccl-tests' table (or --json)
//   keel comm faults [-N N] [--trials T] ...          kill -9 a rank mid-allreduce, time it
// verify and bench with -N re-launch this program N times (unless RANK is already set, i.e.
// it already runs under torchrun, mpirun, srun or `keel comm launch`). The logic lives in
// keel::comm (bench.hpp, selftest.hpp, faults.hpp, launcher.hpp); this file parses and prints.
#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "cli.hpp"
#include "keel/comm/bench.hpp"
#include "keel/comm/communicator.hpp"
#include "keel/comm/environment.hpp"
#include "keel/comm/faults.hpp"
#include "keel/comm/launcher.hpp"
#include "keel/comm/report.hpp"
#include "keel/comm/selftest.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"

namespace keel::cli {
namespace {

using namespace keel::comm;

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<long>(seconds * 1000));
}

// Re-runs this program with `args` as `ranks` local ranks; returns the job's exit code.
int relaunch(int ranks, const std::vector<std::string>& args, bool bind = true) {
  std::vector<std::string> argv = this_invocation().program;
  argv.insert(argv.end(), args.begin(), args.end());
  return run_local_job(ranks, argv, bind, millis(10));
}

options rank_options(const std::string& transport_name, double timeout_s) {
  options o = options::from_env();
  if (!transport_name.empty()) o.transport_kind = parse_transport(transport_name);
  if (timeout_s > 0) o.timeout = duration(static_cast<std::int64_t>(timeout_s * 1000));
  return o;
}

// A buffer size option: every rank allocates (and touches) buffers of this size, so a size
// beyond k_max_buffer is refused up front rather than failing as "out of host memory".
constexpr std::uint64_t k_max_buffer = 16 * k_gib;
std::size_t buffer_size(const std::string& text, const char* option) {
  std::uint64_t bytes = 0;
  try {
    bytes = parse_size(text);
  } catch (const keel::invalid_argument& e) {
    throw keel::invalid_argument(fmt::format("{}: {}", option, e.what()));
  }
  if (bytes > k_max_buffer) {
    throw keel::invalid_argument(
        fmt::format("{} {}: larger than {}, the largest buffer keel comm uses", option, text,
                    format_size_exact(k_max_buffer)));
  }
  return static_cast<std::size_t>(bytes);
}

// `--bind core|none`: pin rank r to the r-th CPU when there are enough (Open MPI's default).
void add_bind_option(CLI::App* cmd, std::string& bind) {
  cmd->add_option("--bind", bind,
                  "core: pin rank r to the r-th CPU when ranks <= CPUs (default); none");
}

bool parse_bind(const std::string& text) {
  if (text == "core") return true;
  if (text == "none") return false;
  throw keel::invalid_argument(fmt::format("--bind '{}': expected core or none", text));
}

// ------------------------------------------------------------------ launch

void add_launch(CLI::App* group) {
  auto* cmd =
      group->add_subcommand("launch", "Start N local ranks of a command (torchrun-style env)");
  static int ranks = 2;
  static double grace = 10;
  static std::vector<std::string> command;
  add_number(cmd, "-n,--nproc", ranks, "Number of ranks", 1, 1024)->required();
  add_number(cmd, "--grace", grace, "Seconds the other ranks get after one fails, then SIGKILL",
             0.0, 3600.0);
  static double limit = 0;
  static std::string bind = "core";
  add_bind_option(cmd, bind);
  add_number(cmd, "--timeout", limit,
             "Kill every rank still running after this many seconds (0: no limit)", 0.0, 1e7);
  cmd->add_option("command", command, "The command and its arguments (after --)")->required();
  cmd->callback([] {
    local_job job(ranks, command, {}, {}, parse_bind(bind));
    job_signal_guard guard(job);
    const auto exits = job.wait(millis(grace), true, millis(limit));
    if (job.timed_out()) {
      std::cerr << fmt::format("keel comm launch: job still running after {:g} s, killed\n", limit);
      exit_quietly(124);
    }
    for (const auto& e : exits) {
      if (e.code != 0)
        std::cerr << fmt::format("keel comm launch: rank {} exited with {}\n", e.rank, e.code);
    }
    if (const int code = job_exit_code(exits); code != 0) exit_quietly(code);
  });
}

// ------------------------------------------------------------------ verify

void add_verify(CLI::App* group) {
  auto* cmd = group->add_subcommand(
      "verify", "Check every collective x algorithm x dtype against a serial reference");
  static std::string ranks_text;
  static bool full = false;
  static std::string max_text = "1M";
  static std::string transport_name;
  static double timeout = 60;
  static bool json = false;
  cmd->add_option("-N,--ranks", ranks_text,
                  "Rank counts to launch, e.g. 1-4 or 2,8 (default 1-4; --full 1-8)");
  cmd->add_flag("--full", full,
                "Every reduction and size (0 .. --max-bytes), not the rotated slice");
  cmd->add_option("--max-bytes", max_text, "Largest buffer (default 1M; the full matrix uses 64M)");
  cmd->add_option("--transport", transport_name, "auto, shm or tcp");
  add_number(cmd, "--timeout", timeout, "Seconds per collective", 0.001, 1e6);
  add_json_flag(cmd, json);
  cmd->callback([] {
    const std::size_t max_bytes = buffer_size(max_text, "--max-bytes");
    if (!transport_name.empty()) parse_transport(transport_name);  // validate early
    if (!launched_rank()) {
      int worst = 0;
      for (int n : parse_rank_list(ranks_text.empty() ? (full ? "1-8" : "1-4") : ranks_text)) {
        std::vector<std::string> args{"comm",        "verify",
                                      "--max-bytes", std::to_string(max_bytes),
                                      "--timeout",   fmt::format("{}", timeout)};
        if (full) args.push_back("--full");
        if (!transport_name.empty()) args.insert(args.end(), {"--transport", transport_name});
        if (json) args.push_back("--json");
        worst = std::max(worst, relaunch(n, args));
      }
      if (worst != 0) exit_quietly(worst == 2 ? 2 : 1);
      return;
    }
    auto c = communicator::from_env(rank_options(transport_name, timeout));
    const verify_report r = run_verify(*c, full, max_bytes);
    if (c->rank() == 0) {
      const std::string kind =
          c->size() > 1 ? std::string(to_string(c->transport_to(1 % c->size()))) : "none";
      if (json) {
        print_json(to_json(r, c->size(), kind));
      } else {
        for (const auto& f : r.failed) std::cout << "FAIL " << f << '\n';
        std::cout << fmt::format("verify: {} ranks ({}): {} cases, {} failed, {:.1f} s\n",
                                 c->size(), kind, r.cases, r.failed.size(), r.seconds);
      }
    }
    if (!r.failed.empty()) exit_quietly(1);
  });
}

// ------------------------------------------------------------------ bench

void add_bench(CLI::App* group) {
  auto* cmd = group->add_subcommand("bench", "Benchmark a collective in nccl-tests' format");
  static std::string min_text = "8", max_text = "64M";
  static bench_options o;
  static int check = 1, ranks = 0;
  static std::string redop_name = "sum", type_name = "float", coll_name = "allreduce";
  static std::string algo_name = "auto", transport_name;
  static double timeout = 60;
  static bool json = false;
  cmd->add_option("-b,--minbytes", min_text, "Smallest size (default 8)");
  cmd->add_option("-e,--maxbytes", max_text, "Largest size (default 64M)");
  add_number(cmd, "-f,--stepfactor", o.factor, "Multiply the size by this (default 2)", 1.01, 1e6);
  add_number(cmd, "-n,--iters", o.iters, "Timed iterations per size (default 20)", 1, 1000000);
  add_number(cmd, "-w,--warmup_iters", o.warmup, "Warm-up iterations (default 5)", 0, 1000000);
  add_number(cmd, "-c,--check", check, "Check results against a reference: 1 yes, 0 no", 0, 1);
  cmd->add_option("-o,--redop", redop_name, "Reduction: sum, prod, min, max, avg (nccl-tests' -o)");
  cmd->add_option("-d,--datatype", type_name, "float, double, half, bfloat16, int32, int64, uint8");
  cmd->add_option(
      "--op", coll_name,
      "Collective: allreduce, reduce, broadcast, reduce_scatter, allgather, alltoall, sendrecv");
  cmd->add_option("--algo", algo_name, "auto, ring, tree, rd, rabenseifner, reducer, direct");
  cmd->add_option("--transport", transport_name, "auto, shm, tcp");
  add_number(cmd, "--timeout", timeout, "Seconds per collective", 0.001, 1e6);
  add_number(cmd, "-r,--root", o.root, "Root rank of reduce/broadcast", 0, 1023);
  add_number(cmd, "-N,--ranks", ranks, "Launch this many local ranks (0: use the environment)", 0,
             256);
  static std::string bind = "core";
  add_bind_option(cmd, bind);
  add_json_flag(cmd, json);
  cmd->callback([] {
    o.min_bytes = buffer_size(min_text, "-b");
    o.max_bytes = buffer_size(max_text, "-e");
    if (o.min_bytes > o.max_bytes) throw keel::invalid_argument("-b is larger than -e");
    o.op = parse_reduce_op(redop_name);
    o.type = parse_dtype(type_name);
    o.coll = parse_collective(coll_name);
    o.algo = parse_algorithm(algo_name);
    if (o.coll == collective::barrier)
      throw keel::invalid_argument("--op barrier: nothing to measure in bytes");
    if (!transport_name.empty()) parse_transport(transport_name);
    parse_bind(bind);
    if (ranks > 0 && !launched_rank()) {
      // The children run this command line without -N, as ranks.
      const auto args = without_option(this_invocation().args, "-N", "--ranks");
      if (const int code = relaunch(ranks, args, parse_bind(bind)); code != 0) exit_quietly(code);
      return;
    }
    o.check = check != 0;
    auto c = communicator::from_env(rank_options(transport_name, timeout));
    const bool me0 = c->rank() == 0;
    if (o.root >= c->size())
      throw keel::invalid_argument(fmt::format("root {} is not a rank of {}", o.root, c->size()));
    if (me0 && !json) std::cout << nccl_tests_header(*c, o);
    const bench_result res = run_bench(*c, o, [&](const bench_row& r) {
      if (me0 && !json) std::cout << nccl_tests_row(r, o) << std::flush;
    });
    if (me0) {
      if (json)
        print_json(to_json(res, o, c->size()));
      else
        std::cout << nccl_tests_footer(res);
    }
    if (res.wrong) exit_quietly(1);
  });
}

// ------------------------------------------------------------------ faults

// Hidden: one rank of `keel comm faults` (run_fault_worker); exits 3 after its ERROR line.
void add_fault_worker(CLI::App* group) {
  auto* cmd = group->add_subcommand("fault-worker", "")->group("");
  static double timeout = 2;
  static std::size_t count = 65536;
  add_number(cmd, "--timeout", timeout, "", 0.001, 1e6);
  add_number(cmd, "--count", count, "", 1, std::size_t{1} << 28);
  cmd->callback([] {
    auto c = communicator::from_env(rank_options("", timeout));
    run_fault_worker(*c, count, std::cout);
    exit_quietly(3);
  });
}

void print_trial(const fault_trial& t) {
  std::cout << fmt::format("trial {:3d}: killed rank {}; ", t.trial, t.victim);
  for (const auto& s : t.survivors) {
    if (s.hang)
      std::cout << fmt::format("rank {} HANG; ", s.rank);
    else
      std::cout << fmt::format("rank {} {} after {:.3f} s (blames {}); ", s.rank, s.error,
                               s.seconds_after_kill, s.blamed_rank);
  }
  std::cout << fmt::format("{} segment(s) left{}\n", t.leftover_segments, t.ok ? "" : "  FAIL");
}

void add_faults(CLI::App* group) {
  auto* cmd = group->add_subcommand(
      "faults", "kill -9 a random rank during an allreduce loop; time how the others fail");
  static fault_options o;
  static bool json = false;
  add_number(cmd, "-N,--ranks", o.ranks, "Ranks per trial (default 4)", 2, 64);
  add_number(cmd, "--trials", o.trials, "Trials (default 20)", 1, 10000);
  add_number(cmd, "--timeout", o.timeout_s, "Collective timeout in seconds (default 2)", 0.05,
             600.0);
  cmd->add_option("--transport", o.transport, "auto, shm or tcp");
  add_number(cmd, "--seed", o.seed, "Random seed for victim and kill time");
  add_json_flag(cmd, json);
  cmd->callback([] {
    parse_transport(o.transport);
    o.worker = this_invocation().program;
    o.worker.insert(o.worker.end(),
                    {"comm", "fault-worker", "--timeout", fmt::format("{}", o.timeout_s)});
    const fault_summary f = run_fault_trials(o, [](const fault_trial& t) {
      if (!json) print_trial(t);
    });
    if (json) {
      print_json(to_json(f, o));
    } else {
      std::cout << fmt::format(
          "faults: {}/{} trials ok; {} hangs; {} trials left segments; worst "
          "error {:.3f} s after the kill (limit {:.3f} s)\n",
          f.ok_trials, o.trials, f.hangs, f.leaks, f.worst_seconds_after_kill, o.timeout_s + 1.0);
    }
    if (f.ok_trials != o.trials) exit_quietly(1);
  });
}

}  // namespace

void add_comm_commands(CLI::App& root) {
  CLI::App* group =
      root.add_subcommand("comm", "Collective communication: launch ranks, benchmark collectives");
  group->require_subcommand(1);
  add_launch(group);
  add_verify(group);
  add_bench(group);
  add_faults(group);
  add_fault_worker(group);
}

}  // namespace keel::cli
