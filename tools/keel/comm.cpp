// `keel comm`: collective communication — launch ranks, verify and benchmark collectives,
// inject faults.
//   keel comm launch -n N [--grace S] [--timeout S] [--bind core|none] -- CMD ARGS
//   keel comm verify [-N LIST] [--full] ...           collectives vs a serial reference
//   keel comm bench  [nccl-tests flags] [-N N] ...    nccl-tests' table (or --json)
//   keel comm faults [-N N] [--trials T] ...          kill -9 a rank mid-allreduce, time it
// verify and bench with -N re-launch this program N times (unless RANK is already set, i.e.
// it already runs under torchrun, mpirun, srun or `keel comm launch`).
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <thread>

#include "cli.hpp"
#include "keel/comm/communicator.hpp"
#include "keel/comm/environment.hpp"
#include "keel/comm/launcher.hpp"
#include "keel/comm/selftest.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"

namespace keel::cli {
namespace {

using namespace keel::comm;
using steady = std::chrono::steady_clock;

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw keel::io_error("cannot find the keel executable (/proc/self/exe)");
  return p.string();
}

bool launched() {
  return std::getenv("RANK") != nullptr || std::getenv("OMPI_COMM_WORLD_RANK") ||
         std::getenv("PMI_RANK") || std::getenv("SLURM_PROCID");
}

// While a job runs, SIGINT, SIGTERM and SIGHUP to the launcher kill its ranks too (then the
// launcher dies of the signal as usual): an interrupted or timed-out launcher leaves no
// ranks behind.
volatile std::sig_atomic_t g_job_ranks = 0;
pid_t g_job_pids[1024];

extern "C" void kill_job_and_die(int sig) {
  for (std::sig_atomic_t i = 0; i < g_job_ranks; ++i) ::kill(g_job_pids[i], SIGKILL);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

struct job_signal_guard {
  explicit job_signal_guard(const local_job& job) {
    const auto& pids = job.pids();
    const std::size_t n = std::min<std::size_t>(pids.size(), std::size(g_job_pids));
    for (std::size_t i = 0; i < n; ++i) g_job_pids[i] = pids[i];
    g_job_ranks = static_cast<std::sig_atomic_t>(n);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, kill_job_and_die);
  }
  ~job_signal_guard() {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    g_job_ranks = 0;
  }
};

// Re-runs this very command line as `ranks` local ranks and returns the job's exit code.
int relaunch(int ranks, const std::vector<std::string>& args, bool bind = true,
             double grace_s = 10) {
  std::vector<std::string> argv{self_exe()};
  argv.insert(argv.end(), args.begin(), args.end());
  local_job job(ranks, argv, {}, {}, bind);
  job_signal_guard guard(job);
  return job_exit_code(job.wait(std::chrono::milliseconds(static_cast<long>(grace_s * 1000))));
}

// argv[1..] of this process as given (main() keeps argv to itself; /proc has it).
std::vector<std::string> original_args() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  if (!args.empty()) args.erase(args.begin());
  return args;
}

std::vector<int> parse_rank_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        out.push_back(std::stoi(part));
      } else {
        for (int r = std::stoi(part.substr(0, dash)); r <= std::stoi(part.substr(dash + 1)); ++r) {
          out.push_back(r);
        }
      }
    } catch (const std::exception&) {
      throw keel::invalid_argument(fmt::format("rank list '{}': expected e.g. 1-4 or 2,4,8", text));
    }
  }
  for (int r : out) {
    if (r < 1 || r > 256)
      throw keel::invalid_argument(fmt::format("rank count {} outside [1, 256]", r));
  }
  if (out.empty()) throw keel::invalid_argument("empty rank list");
  return out;
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
    const auto exits = job.wait(std::chrono::milliseconds(static_cast<long>(grace * 1000)), true,
                                std::chrono::milliseconds(static_cast<long>(limit * 1000)));
    if (job.timed_out()) {
      std::cerr << fmt::format("keel comm launch: job still running after {:g} s, killed\n", limit);
      std::exit(124);
    }
    for (const auto& e : exits) {
      if (e.code != 0)
        std::cerr << fmt::format("keel comm launch: rank {} exited with {}\n", e.rank, e.code);
    }
    if (const int code = job_exit_code(exits); code != 0) std::exit(code);
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
    if (!launched()) {
      const std::vector<int> counts =
          parse_rank_list(ranks_text.empty() ? (full ? "1-8" : "1-4") : ranks_text);
      int worst = 0;
      for (int n : counts) {
        std::vector<std::string> args{"comm",        "verify",
                                      "--max-bytes", std::to_string(max_bytes),
                                      "--timeout",   fmt::format("{}", timeout)};
        if (full) args.push_back("--full");
        if (!transport_name.empty()) args.insert(args.end(), {"--transport", transport_name});
        if (json) args.push_back("--json");
        const int code = relaunch(n, args);
        worst = std::max(worst, code);
      }
      if (worst != 0) std::exit(worst == 2 ? 2 : 1);
      return;
    }
    auto c = communicator::from_env(rank_options(transport_name, timeout));
    const auto cases = case_matrix(c->size(), full, max_bytes);
    const auto t0 = steady::now();
    std::vector<std::string> failed;
    for (const test_case& t : cases) {
      std::int64_t wrong = static_cast<std::int64_t>(run_case(*c, t));
      c->allreduce(&wrong, &wrong, 1, dtype::i64, reduce_op::sum);
      if (wrong) failed.push_back(fmt::format("{}: {} wrong", describe(t), wrong));
    }
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    if (c->rank() == 0) {
      const std::string kind =
          c->size() > 1 ? std::string(to_string(c->transport_to(1 % c->size()))) : "none";
      if (json) {
        print_json({{"ranks", c->size()},
                    {"transport", kind},
                    {"cases", cases.size()},
                    {"failed", failed},
                    {"seconds", seconds}});
      } else {
        for (const auto& f : failed) std::cout << "FAIL " << f << '\n';
        std::cout << fmt::format("verify: {} ranks ({}): {} cases, {} failed, {:.1f} s\n",
                                 c->size(), kind, cases.size(), failed.size(), seconds);
      }
    }
    if (!failed.empty()) std::exit(1);
  });
}

// ------------------------------------------------------------------ bench

double busbw_factor(collective c, int n) {
  switch (c) {
    case collective::allreduce: return 2.0 * (n - 1) / n;
    case collective::reduce_scatter:
    case collective::allgather:
    case collective::alltoall: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

std::string time_text(double us) {
  if (us < 10000) return fmt::format("{:7.2f}", us);
  if (us < 100000) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.0f}", us);
}

struct bench_result {
  double time_us = 0, algbw = 0, busbw = 0;
  std::int64_t wrong = 0;
};

void add_bench(CLI::App* group) {
  auto* cmd = group->add_subcommand("bench", "Benchmark a collective in nccl-tests' format");
  static std::string min_text = "8", max_text = "64M";
  static double factor = 2;
  static int iters = 20, warmup = 5, check = 1, ranks = 0, root = 0;
  static std::string redop_name = "sum", type_name = "float", coll_name = "allreduce";
  static std::string algo_name = "auto", transport_name;
  static double timeout = 60;
  static bool json = false;
  cmd->add_option("-b,--minbytes", min_text, "Smallest size (default 8)");
  cmd->add_option("-e,--maxbytes", max_text, "Largest size (default 64M)");
  add_number(cmd, "-f,--stepfactor", factor, "Multiply the size by this (default 2)", 1.01, 1e6);
  add_number(cmd, "-n,--iters", iters, "Timed iterations per size (default 20)", 1, 1000000);
  add_number(cmd, "-w,--warmup_iters", warmup, "Warm-up iterations (default 5)", 0, 1000000);
  add_number(cmd, "-c,--check", check, "Check results against a reference: 1 yes, 0 no", 0, 1);
  cmd->add_option("-o,--redop", redop_name, "Reduction: sum, prod, min, max, avg (nccl-tests' -o)");
  cmd->add_option("-d,--datatype", type_name, "float, double, half, bfloat16, int32, int64, uint8");
  cmd->add_option(
      "--op", coll_name,
      "Collective: allreduce, reduce, broadcast, reduce_scatter, allgather, alltoall, sendrecv");
  cmd->add_option("--algo", algo_name, "auto, ring, tree, rd, rabenseifner, reducer, direct");
  cmd->add_option("--transport", transport_name, "auto, shm, tcp");
  add_number(cmd, "--timeout", timeout, "Seconds per collective", 0.001, 1e6);
  add_number(cmd, "-r,--root", root, "Root rank of reduce/broadcast", 0, 1023);
  add_number(cmd, "-N,--ranks", ranks, "Launch this many local ranks (0: use the environment)", 0,
             256);
  static std::string bind = "core";
  add_bind_option(cmd, bind);
  add_json_flag(cmd, json);
  cmd->callback([] {
    const std::size_t min_bytes = buffer_size(min_text, "-b"),
                      max_bytes = buffer_size(max_text, "-e");
    if (min_bytes > max_bytes) throw keel::invalid_argument("-b is larger than -e");
    const reduce_op redop = parse_reduce_op(redop_name);
    const dtype type = parse_dtype(type_name);
    const collective coll = parse_collective(coll_name);
    const algorithm algo = parse_algorithm(algo_name);
    if (coll == collective::barrier)
      throw keel::invalid_argument("--op barrier: nothing to measure in bytes");
    if (!transport_name.empty()) parse_transport(transport_name);
    parse_bind(bind);
    if (ranks > 0 && !launched()) {
      std::vector<std::string> args = original_args();
      // Drop -N/--ranks and its value so the children run as ranks.
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "-N" || args[i] == "--ranks") {
          args.erase(args.begin() + static_cast<long>(i),
                     args.begin() + static_cast<long>(std::min(i + 2, args.size())));
          break;
        }
        if (args[i].rfind("--ranks=", 0) == 0 ||
            (args[i].rfind("-N", 0) == 0 && args[i].size() > 2)) {
          args.erase(args.begin() + static_cast<long>(i));
          break;
        }
      }
      if (const int code = relaunch(ranks, args, parse_bind(bind)); code != 0) std::exit(code);
      return;
    }
    auto c = communicator::from_env(rank_options(transport_name, timeout));
    const int n = c->size(), me = c->rank();
    if (root >= n)
      throw keel::invalid_argument(fmt::format("root {} is not a rank of {}", root, n));
    const std::size_t E = dtype_size(type);
    const bool per_rank = coll == collective::reduce_scatter || coll == collective::allgather ||
                          coll == collective::alltoall;
    const bool reduces = coll == collective::allreduce || coll == collective::reduce ||
                         coll == collective::reduce_scatter;
    std::vector<std::byte> in, out;
    nlohmann::json rows = nlohmann::json::array();
    double bw_sum = 0;
    int bw_count = 0;
    std::int64_t wrong_total = 0;
    if (me == 0 && !json) {
      std::cout << fmt::format(
          "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: {}(factor) "
          "warmup iters: {} iters: {} agg iters: 1 validation: {} graph: 0\n#\n",
          min_bytes, max_bytes, factor, warmup, iters, check);
      std::cout << "# Using devices\n";
      char host[256] = {};
      ::gethostname(host, sizeof host - 1);
      for (int r = 0; r < n; ++r) {
        std::cout << fmt::format("#  Rank {:2d} Group  0 Pid {:6d} on {:>10} device  0 [cpu] {}\n",
                                 r, r == 0 ? ::getpid() : 0, host,
                                 r == 0 ? "self" : to_string(c->transport_to(r)));
      }
      std::cout << "#\n";
      std::cout << "#                                                              out-of-place    "
                   "                   in-place          \n";
      std::cout << "#       size         count      type   redop    root     time   algbw   busbw "
                   "#wrong     time   algbw   busbw #wrong\n";
      std::cout << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)  "
                   "          (us)  (GB/s)  (GB/s)       \n";
    }
    for (double sz = static_cast<double>(min_bytes);
         sz <= static_cast<double>(max_bytes) * 1.0000001; sz = std::max(sz * factor, sz + 1)) {
      const std::size_t bytes_req = static_cast<std::size_t>(sz);
      std::size_t count = bytes_req / E / (per_rank ? n : 1);
      const std::size_t bytes = count * E * (per_rank ? n : 1);
      const std::size_t in_elems =
          (coll == collective::reduce_scatter || coll == collective::alltoall) ? count * n : count;
      const std::size_t out_elems =
          (coll == collective::allgather || coll == collective::alltoall) ? count * n : count;
      in.assign(in_elems * E, std::byte{1});
      out.assign(out_elems * E, std::byte{0});
      call_options co;
      co.algo = algo;
      bench_result res[2];
      for (int place = 0; place < 2; ++place) {
        const bool inplace = place == 1;
        auto once = [&] {
          std::byte* ip = in.data();
          std::byte* op = out.data();
          switch (coll) {
            case collective::allreduce:
              c->allreduce(inplace ? op : ip, op, count, type, redop, co);
              break;
            case collective::reduce:
              c->reduce(inplace ? op : ip, op, count, type, redop, root, co);
              break;
            case collective::broadcast:
              c->broadcast(inplace ? op : ip, op, count, type, root, co);
              break;
            case collective::reduce_scatter:
              c->reduce_scatter(ip, inplace ? ip + me * count * E : op, count, type, redop, co);
              break;
            case collective::allgather:
              c->allgather(inplace ? op + me * count * E : ip, op, count, type, co);
              break;
            case collective::alltoall: c->alltoall(inplace ? op : ip, op, count, type, co); break;
            case collective::sendrecv:
              if (n == 1) break;
              if (me % 2 == 0) {
                c->send(ip, count, type, (me + 1) % n, co);
                c->recv(op, count, type, (me - 1 + n) % n, co);
              } else {
                c->recv(op, count, type, (me - 1 + n) % n, co);
                c->send(ip, count, type, (me + 1) % n, co);
              }
              break;
            default: break;
          }
        };
        for (int i = 0; i < warmup; ++i) once();
        c->barrier();
        const auto t0 = steady::now();
        for (int i = 0; i < iters; ++i) once();
        double us = std::chrono::duration<double, std::micro>(steady::now() - t0).count() / iters;
        c->allreduce(&us, &us, 1, dtype::f64, reduce_op::max);
        std::int64_t wrong = 0;
        if (check) {
          test_case t{coll, algo, type, redop, count, root, inplace};
          wrong = static_cast<std::int64_t>(run_case(*c, t, co));
          c->allreduce(&wrong, &wrong, 1, dtype::i64, reduce_op::sum);
        }
        res[place].time_us = us;
        res[place].algbw = us > 0 ? static_cast<double>(bytes) / (us * 1e3) : 0;
        res[place].busbw = res[place].algbw * busbw_factor(coll, n);
        res[place].wrong = wrong;
        wrong_total += wrong;
        bw_sum += res[place].busbw;
        ++bw_count;
      }
      const int shown_root =
          (coll == collective::reduce || coll == collective::broadcast) ? root : -1;
      if (me == 0) {
        if (json) {
          rows.push_back({{"size", bytes},
                          {"count", count},
                          {"type", to_string(type)},
                          {"redop", reduces ? to_string(redop) : "none"},
                          {"root", shown_root},
                          {"time_us", res[0].time_us},
                          {"algbw", res[0].algbw},
                          {"busbw", res[0].busbw},
                          {"wrong", res[0].wrong},
                          {"in_place",
                           {{"time_us", res[1].time_us},
                            {"algbw", res[1].algbw},
                            {"busbw", res[1].busbw},
                            {"wrong", res[1].wrong}}}});
        } else {
          std::cout << fmt::format("{:12d}  {:12d}  {:>8}  {:>6}  {:6d}", bytes, count,
                                   to_string(type), reduces ? to_string(redop) : "none",
                                   shown_root);
          for (const auto& r : res) {
            std::cout << fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", time_text(r.time_us), r.algbw,
                                     r.busbw, check ? std::to_string(r.wrong) : std::string("N/A"));
          }
          std::cout << '\n' << std::flush;
        }
      }
      if (bytes_req >= max_bytes) break;
    }
    const double avg = bw_count ? bw_sum / bw_count : 0;
    if (me == 0) {
      if (json) {
        print_json({{"collective", to_string(coll)},
                    {"ranks", n},
                    {"algo", to_string(algo)},
                    {"rows", rows},
                    {"avg_busbw", avg},
                    {"wrong", wrong_total}});
      } else {
        std::cout << fmt::format("# Out of bounds values : {} {}\n", wrong_total,
                                 wrong_total ? "FAILED" : "OK");
        std::cout << fmt::format("# Avg bus bandwidth : {:g}\n#\n", avg);
      }
    }
    if (wrong_total) std::exit(1);
  });
}

// ------------------------------------------------------------------ faults

// Hidden: one rank of `keel comm faults`. Loops allreduce until an error, then prints
// "ERROR <kind> <realtime ns> <collective> <seq> <rank> <message>" and exits 3.
void add_fault_worker(CLI::App* group) {
  auto* cmd = group->add_subcommand("fault-worker", "")->group("");
  static double timeout = 2;
  static std::size_t count = 65536;
  add_number(cmd, "--timeout", timeout, "", 0.001, 1e6);
  add_number(cmd, "--count", count, "", 1, std::size_t{1} << 28);
  cmd->callback([] {
    auto c = communicator::from_env(rank_options("", timeout));
    std::vector<float> a(count, 1.0f), b(count);
    for (std::uint64_t i = 0;; ++i) {
      try {
        c->allreduce(a.data(), b.data(), count, dtype::f32, reduce_op::sum);
      } catch (const comm_error& e) {
        const auto now = std::chrono::system_clock::now().time_since_epoch();
        const char* kind = dynamic_cast<const timeout_error*>(&e) ? "timeout"
                           : dynamic_cast<const peer_error*>(&e)  ? "peer"
                                                                  : "other";
        std::cout << fmt::format("ERROR {} {} {} {} {} {}\n", kind,
                                 std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(),
                                 e.collective(), e.seq(), e.rank(), e.what())
                  << std::flush;
        std::exit(3);
      }
      if (i == 2) std::cout << "READY\n" << std::flush;
    }
  });
}

void add_faults(CLI::App* group) {
  auto* cmd = group->add_subcommand(
      "faults", "kill -9 a random rank during an allreduce loop; time how the others fail");
  static int ranks = 4, trials = 20;
  static double timeout = 2;
  static std::string transport_name = "auto";
  static bool json = false;
  static unsigned seed = 1;
  add_number(cmd, "-N,--ranks", ranks, "Ranks per trial (default 4)", 2, 64);
  add_number(cmd, "--trials", trials, "Trials (default 20)", 1, 10000);
  add_number(cmd, "--timeout", timeout, "Collective timeout in seconds (default 2)", 0.05, 600.0);
  cmd->add_option("--transport", transport_name, "auto, shm or tcp");
  add_number(cmd, "--seed", seed, "Random seed for victim and kill time");
  add_json_flag(cmd, json);
  cmd->callback([] {
    parse_transport(transport_name);
    std::mt19937 rng(seed);
    const auto logs =
        std::filesystem::temp_directory_path() / fmt::format("keel-comm-faults-{}", ::getpid());
    nlohmann::json results = nlohmann::json::array();
    int ok_trials = 0, hangs = 0, leaks = 0;
    double worst = 0;
    for (int t = 0; t < trials; ++t) {
      std::filesystem::remove_all(logs);
      local_job job(ranks,
                    {self_exe(), "comm", "fault-worker", "--timeout", fmt::format("{}", timeout)},
                    {{"KEEL_COMM_TRANSPORT", transport_name}}, logs.string());
      job_signal_guard guard(job);
      // Wait until every rank runs its loop, then kill one at a random moment.
      const auto ready_deadline = steady::now() + std::chrono::seconds(60);
      auto log_of = [&](int r) {
        std::ifstream in(logs / fmt::format("rank-{}.log", r));
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      };
      while (steady::now() < ready_deadline) {
        int ready = 0;
        for (int r = 0; r < ranks; ++r) ready += log_of(r).find("READY") != std::string::npos;
        if (ready == ranks) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(10, 300)(rng)));
      const int victim = std::uniform_int_distribution<int>(0, ranks - 1)(rng);
      const auto killed_at = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
      ::kill(job.pids()[static_cast<std::size_t>(victim)], SIGKILL);
      const auto exits =
          job.wait(std::chrono::milliseconds(static_cast<long>(timeout * 1000) + 5000), false);
      const auto leftover = job.leftover_segments();
      for (const auto& name : leftover) std::filesystem::remove("/dev/shm/" + name);
      nlohmann::json trial{
          {"trial", t}, {"victim", victim}, {"leftover_segments", leftover.size()}};
      nlohmann::json survivors = nlohmann::json::array();
      bool trial_ok = leftover.empty();
      leaks += !leftover.empty();
      for (int r = 0; r < ranks; ++r) {
        if (r == victim) continue;
        const std::string log = log_of(r);
        const auto pos = log.find("ERROR ");
        nlohmann::json s{{"rank", r}, {"exit", exits[static_cast<std::size_t>(r)].code}};
        if (pos == std::string::npos || exits[static_cast<std::size_t>(r)].code == 128 + SIGKILL) {
          s["hang"] = true;
          ++hangs;
          trial_ok = false;
        } else {
          std::istringstream line(log.substr(pos + 6));
          std::string kind, coll;
          long long ns = 0;
          std::uint64_t seq = 0;
          int blamed = -1;
          line >> kind >> ns >> coll >> seq >> blamed;
          const double after = (ns - killed_at) / 1e9;
          s["error"] = kind;
          s["seconds_after_kill"] = after;
          s["blamed_rank"] = blamed;
          s["seq"] = seq;
          worst = std::max(worst, after);
          if (after > timeout + 1.0) trial_ok = false;
        }
        survivors.push_back(s);
      }
      trial["survivors"] = survivors;
      trial["ok"] = trial_ok;
      ok_trials += trial_ok;
      results.push_back(trial);
      if (!json) {
        std::cout << fmt::format("trial {:3d}: killed rank {}; ", t, victim);
        for (const auto& s : survivors) {
          if (s.contains("hang"))
            std::cout << fmt::format("rank {} HANG; ", s["rank"].get<int>());
          else
            std::cout << fmt::format("rank {} {} after {:.3f} s (blames {}); ",
                                     s["rank"].get<int>(), s["error"].get<std::string>(),
                                     s["seconds_after_kill"].get<double>(),
                                     s["blamed_rank"].get<int>());
        }
        std::cout << fmt::format("{} segment(s) left{}\n", leftover.size(),
                                 trial_ok ? "" : "  FAIL");
      }
    }
    std::filesystem::remove_all(logs);
    if (json) {
      print_json({{"ranks", ranks},
                  {"trials", trials},
                  {"timeout_s", timeout},
                  {"ok_trials", ok_trials},
                  {"hangs", hangs},
                  {"trials_with_leftover_segments", leaks},
                  {"worst_seconds_after_kill", worst},
                  {"results", results}});
    } else {
      std::cout << fmt::format(
          "faults: {}/{} trials ok; {} hangs; {} trials left segments; worst "
          "error {:.3f} s after the kill (limit {:.3f} s)\n",
          ok_trials, trials, hangs, leaks, worst, timeout + 1.0);
    }
    if (ok_trials != trials) std::exit(1);
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
