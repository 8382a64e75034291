// The C++ side of bench/random/peers.py: normal floats (and doubles) from keel's Philox
// generator, libcurand's host generator and std::normal_distribution over std::mt19937, the
// same count on the same number of threads, one JSON object per line:
//   {"peer": "...", "dtype": "float32", "threads": T, "seconds": best, "gsps": G}
// keel runs its own worker threads (generator::set_threads(T)); libcurand's host generator and
// the standard library have none, so T of them (one each, seeded apart) fill T equal slices
// at once, which is what a caller with T threads would do.
//
//   keel_random_peers --count N --threads T --repeats R
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "keel/random/curand_reference.hpp"
#include "keel/random/generator.hpp"

namespace {

namespace kr = keel::random;

// Best wall time of `repeats` calls of f.
double best_seconds(int repeats, const std::function<void()>& f) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Runs part(i, begin, end) for the T slices of [0, n) on T threads (the caller's among them).
void split(unsigned threads, std::size_t n,
           const std::function<void(unsigned, std::size_t, std::size_t)>& part) {
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i)
    pool.emplace_back(part, i, n * i / threads, n * (i + 1) / threads);
  part(0, 0, n / threads);
  for (auto& t : pool) t.join();
}

void report(const char* peer, const char* dtype, unsigned threads, std::size_t n, double s) {
  fmt::print(R"({{"peer": "{}", "dtype": "{}", "threads": {}, "seconds": {:.6f}, "gsps": {:.6f}}})"
             "\n",
             peer, dtype, threads, s, static_cast<double>(n) / s * 1e-9);
}

bool ok(kr::status s) { return s == kr::status::success; }

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = std::size_t{1} << 26;
  unsigned threads = 1;
  int repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--count")
      n = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--threads")
      threads = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    else if (a == "--repeats")
      repeats = std::atoi(argv[i + 1]);
    else {
      fmt::print(stderr, "usage: {} [--count N] [--threads T] [--repeats R]\n", argv[0]);
      return 2;
    }
  }
  if (n == 0 || threads == 0 || repeats < 1) {
    fmt::print(stderr, "count, threads and repeats must be positive\n");
    return 2;
  }
  std::vector<float> f(n);
  std::vector<double> d(n);
  std::atomic<bool> failed{false};  // set from the slices' threads

  {
    kr::generator g(kr::rng_type::philox4_32_10);
    g.set_threads(threads);
    g.set_seed(1234);
    report("keel philox4_32_10", "float32", threads, n, best_seconds(repeats, [&] {
             if (!ok(g.generate_normal(f.data(), n, 0.0f, 1.0f))) failed = true;
           }));
    report("keel philox4_32_10", "float64", threads, n, best_seconds(repeats, [&] {
             if (!ok(g.generate_normal_double(d.data(), n, 0.0, 1.0))) failed = true;
           }));
  }

  const auto& ref = kr::curand_reference::get();
  if (ref.available()) {
    std::vector<std::unique_ptr<kr::curand_generator>> gs(threads);
    for (unsigned i = 0; i < threads; ++i) {
      if (!ok(ref.create_host_generator(kr::rng_type::philox4_32_10, gs[i]))) failed = true;
      gs[i]->set_seed(1234 + i);
    }
    // Even slice lengths: libcurand's Philox takes odd counts, but keep the halves equal.
    report("libcurand host philox4_32_10", "float32", threads, n, best_seconds(repeats, [&] {
             split(threads, n, [&](unsigned i, std::size_t b, std::size_t e) {
               if (!ok(gs[i]->generate_normal(f.data() + b, e - b, 0.0f, 1.0f))) failed = true;
             });
           }));
    report("libcurand host philox4_32_10", "float64", threads, n, best_seconds(repeats, [&] {
             split(threads, n, [&](unsigned i, std::size_t b, std::size_t e) {
               if (!ok(gs[i]->generate_normal_double(d.data() + b, e - b, 0.0, 1.0))) failed = true;
             });
           }));
  } else {
    fmt::print(stderr, "libcurand not found: {}\n", ref.description());
  }

  {
    std::vector<std::mt19937> engines;
    for (unsigned i = 0; i < threads; ++i) engines.emplace_back(1234 + i);
    report("std::normal_distribution<float> + std::mt19937", "float32", threads, n,
           best_seconds(repeats, [&] {
             split(threads, n, [&](unsigned i, std::size_t b, std::size_t e) {
               std::normal_distribution<float> dist(0.0f, 1.0f);
               for (std::size_t k = b; k < e; ++k) f[k] = dist(engines[i]);
             });
           }));
    report("std::normal_distribution<double> + std::mt19937_64", "float64", threads, n,
           best_seconds(repeats, [&] {
             std::vector<std::mt19937_64> e64;
             for (unsigned i = 0; i < threads; ++i) e64.emplace_back(1234 + i);
             split(threads, n, [&](unsigned i, std::size_t b, std::size_t e) {
               std::normal_distribution<double> dist(0.0, 1.0);
               for (std::size_t k = b; k < e; ++k) d[k] = dist(e64[i]);
             });
           }));
  }
  // Keep the outputs observable so nothing is optimized away.
  double sum = 0;
  for (std::size_t k = 0; k < n; k += 4099) sum += f[k] + d[k];
  fmt::print(stderr, "checksum {}\n", sum);
  return failed ? 1 : 0;
}
