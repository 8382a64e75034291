#include "keel/perf/calibrate.hpp"

#include "keel/core/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <time.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace keel::perf {
namespace {

// kAcc independent vector accumulators hide the FMA latency (4-5 cycles x 2 pipes).
constexpr int k_acc = 16;
constexpr long k_inner = 1024;

template <class V, class T>
[[gnu::always_inline]] inline double fma_body(long iterations, T seed) {
  V acc[k_acc];
  V x, y;
  for (int lane = 0; lane < static_cast<int>(sizeof(V) / sizeof(T)); ++lane) {
    x[lane] = static_cast<T>(0.999999);
    y[lane] = static_cast<T>(1e-7);
  }
  for (int a = 0; a < k_acc; ++a) acc[a] = x * seed + static_cast<T>(a);
  for (long it = 0; it < iterations; ++it) {
    for (long j = 0; j < k_inner; ++j) {
#pragma GCC unroll 16
      for (int a = 0; a < k_acc; ++a) acc[a] = acc[a] * x + y;
    }
  }
  V sum = acc[0];
  for (int a = 1; a < k_acc; ++a) sum += acc[a];
  double out = 0;
  for (int lane = 0; lane < static_cast<int>(sizeof(V) / sizeof(T)); ++lane) out += sum[lane];
  return out;
}

using f32x16 = float __attribute__((vector_size(64)));
using f64x8 = double __attribute__((vector_size(64)));
using f32x8 = float __attribute__((vector_size(32)));
using f64x4 = double __attribute__((vector_size(32)));
using f32x4 = float __attribute__((vector_size(16)));
using f64x2 = double __attribute__((vector_size(16)));

[[gnu::target("avx512f,fma")]] double fma_avx512_f32(long n) {
  return fma_body<f32x16, float>(n, 1.0f);
}
[[gnu::target("avx512f,fma")]] double fma_avx512_f64(long n) {
  return fma_body<f64x8, double>(n, 1.0);
}
[[gnu::target("avx2,fma")]] double fma_avx2_f32(long n) { return fma_body<f32x8, float>(n, 1.0f); }
[[gnu::target("avx2,fma")]] double fma_avx2_f64(long n) { return fma_body<f64x4, double>(n, 1.0); }
double fma_sse_f32(long n) { return fma_body<f32x4, float>(n, 1.0f); }
double fma_sse_f64(long n) { return fma_body<f64x2, double>(n, 1.0); }

struct fma_kernel {
  double (*run)(long);
  double flops_per_iteration;  // per outer iteration: k_inner x k_acc x lanes x 2
};

struct isa_choice {
  std::string name;
  fma_kernel f32, f64;
};

isa_choice pick_isa() {
  __builtin_cpu_init();
  const double per = static_cast<double>(k_inner) * k_acc * 2;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
    return {"avx512f", {fma_avx512_f32, per * 16}, {fma_avx512_f64, per * 8}};
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {"avx2+fma", {fma_avx2_f32, per * 8}, {fma_avx2_f64, per * 4}};
  }
  return {"sse2", {fma_sse_f32, per * 4}, {fma_sse_f64, per * 2}};
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs `body(thread_index)` on `threads` threads, all released at once, and returns the
// largest CPU time one of them spent in `body`. CPU time, not wall time: on a shared machine
// the scheduler may take the core away, and the hardware's rate is what is being measured.
template <class F>
double timed_parallel(int threads, F body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> cpu(static_cast<std::size_t>(threads), 0.0);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const double start = thread_cpu_seconds();
      body(t);
      cpu[static_cast<std::size_t>(t)] = thread_cpu_seconds() - start;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  return *std::max_element(cpu.begin(), cpu.end());
}

// Best of several timed runs of an FMA kernel sized to last about `seconds`.
double measure_flops(const fma_kernel& k, int threads, double seconds) {
  long iterations = 16;
  std::atomic<double> sink{0};
  for (;;) {  // size the run on one thread
    const double start = thread_cpu_seconds();
    sink.store(k.run(iterations));
    const double t = thread_cpu_seconds() - start;
    if (t > seconds / 4) {
      iterations = static_cast<long>(static_cast<double>(iterations) * seconds / 2 / t) + 1;
      break;
    }
    iterations *= 2;
  }
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double t = timed_parallel(threads, [&](int) { sink.store(k.run(iterations)); });
    best = std::max(best, k.flops_per_iteration * static_cast<double>(iterations) * threads / t);
  }
  if (sink.load() == 12345.0) std::abort();  // keep the result alive
  return best;
}

// STREAM triad over `bytes_total` (three arrays split across threads): best of the reps.
double measure_triad(double bytes_total, int threads, double seconds) {
  const std::size_t n =
      std::max<std::size_t>(1024, static_cast<std::size_t>(bytes_total / 3 / 8 / threads));
  std::vector<std::unique_ptr<double[]>> a(threads), b(threads), c(threads);
  timed_parallel(threads, [&](int t) {  // first touch on the thread that uses it
    a[t].reset(new double[n]);
    b[t].reset(new double[n]);
    c[t].reset(new double[n]);
    for (std::size_t i = 0; i < n; ++i) a[t][i] = 0, b[t][i] = 1.0, c[t][i] = 2.0;
  });
  const double pass_bytes = 3.0 * 8 * static_cast<double>(n) * threads;
  long passes = 1;
  auto run = [&](long count) {
    return timed_parallel(threads, [&](int t) {
      double* __restrict x = a[t].get();
      const double* __restrict y = b[t].get();
      const double* __restrict z = c[t].get();
      for (long p = 0; p < count; ++p) {
        const double s = 3.0 + static_cast<double>(p & 1);
        for (std::size_t i = 0; i < n; ++i) x[i] = y[i] + s * z[i];
        asm volatile("" ::"r"(x) : "memory");
      }
    });
  };
  run(1);  // warm the caches / fault the pages
  for (double t = run(passes); t < seconds / 8; t = run(passes)) passes *= 2;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep)
    best = std::max(best, pass_bytes * static_cast<double>(passes) / run(passes));
  return best;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

double mem_total_gib() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemTotal:", 0) == 0) return std::atof(line.c_str() + 9) / 1024 / 1024;  // kB
  }
  return 0;
}

}  // namespace

calibration calibrate_cpu(const calibrate_options& options) {
  if (options.threads < 1) throw invalid_argument("threads must be >= 1");
  if (!(options.seconds_per_test > 0)) throw invalid_argument("seconds per test must be positive");
  if (!(options.dram_bytes >= 1024.0 * 1024))
    throw invalid_argument("DRAM working set must be at least 1 MiB");
  calibration c;
  c.cpu = cpu_model();
  c.threads = options.threads;
  c.memory_gib = mem_total_gib();
  const isa_choice isa = pick_isa();
  c.isa = isa.name;
  c.fp32_gflops = measure_flops(isa.f32, options.threads, options.seconds_per_test) / 1e9;
  c.fp64_gflops = measure_flops(isa.f64, options.threads, options.seconds_per_test) / 1e9;
  // Bandwidth against working-set size: each point is a "level" an op of at most that many
  // bytes streams at (no cache sizes needed, and virtual machines often misreport them).
  for (double ws :
       {256.0 * 1024, 1024.0 * 1024, 4.0 * 1024 * 1024, 16.0 * 1024 * 1024, 64.0 * 1024 * 1024}) {
    const double total = ws * options.threads;
    c.levels.push_back({fmt::format("ws-{}KiB", static_cast<long>(total / 1024)), total,
                        measure_triad(total, options.threads, options.seconds_per_test) / 1e9});
  }
  c.dram_gbs = measure_triad(options.dram_bytes, options.threads, options.seconds_per_test) / 1e9;
  return c;
}

std::string calibration_document(const calibration& c, const std::string& name) {
  using nlohmann::json;
  json levels = json::array();
  for (const memory_level& l : c.levels) {
    levels.push_back({{"name", l.name}, {"bytes", l.bytes}, {"bandwidth_gbs", l.bandwidth_gbs}});
  }
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  json doc = {
      {"schema", "keel.perf.gpus/1"},
      {"conventions",
       "A CPU measured by keel perf calibrate: tflops are the best of three timed "
       "runs of an FMA loop, bandwidths the best of five STREAM triad passes."},
      {"sources",
       {{"keel-calibrate",
         {{"title",
           fmt::format("Measured by keel perf calibrate ({} thread{}, {}), {:04}-{:02}-{:02}",
                       c.threads, c.threads == 1 ? "" : "s", c.isa, utc.tm_year + 1900,
                       utc.tm_mon + 1, utc.tm_mday)},
          {"url", "https://www.cs.virginia.edu/stream/ref.html"}}}}},
      {"compute_capabilities", json::array()},
      {"cuda", json::array()},
      {"cudnn", json::array()},
      {"gpus",
       {{{"name", name},
         {"display", fmt::format("{} ({} thread{})", c.cpu, c.threads, c.threads == 1 ? "" : "s")},
         {"arch", "CPU " + c.isa},
         {"segment", "cpu"},
         {"cc", "0.0"},
         {"year", utc.tm_year + 1900},
         {"sms", c.threads},
         {"tflops", {{"fp32", c.fp32_gflops / 1e3}, {"fp64", c.fp64_gflops / 1e3}}},
         {"memory_gb", c.memory_gib},
         {"memory_type", "DRAM"},
         {"bandwidth_gbs", c.dram_gbs},
         {"cache_levels", levels},
         {"source", {"keel-calibrate"}}}}}};
  return doc.dump(2) + "\n";
}

}  // namespace keel::perf
