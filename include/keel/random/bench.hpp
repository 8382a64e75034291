// keel::random's side-by-side benchmark: each (generator, distribution) row generates the
// same values with keel's generator (one thread, then all threads) and with libcurand's host
// generator when it can be loaded, and reports billions of values per second for both (best
// of `repeats` runs). `keel rand bench` prints these rows. Runs on the calling thread (keel's
// generator may use its worker threads); no shared state apart from curand_reference::get().
// to_text(row) is the line the CLI prints per row, to_json(options, rows) its `--json`
// document.
//
// Part of keel::random_verify (link it; keel::random alone never includes this header).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "keel/random/generator.hpp"
#include "keel/random/verify.hpp"

namespace keel::random {

struct bench_options {
  std::size_t count = std::size_t{1} << 26;  // values per row
  int repeats = 3;                           // best of this many runs, >= 1
  // Time by the calling thread's CPU time instead of wall time: single-threaded rows only
  // (other threads' CPU time is not the caller's).
  bool cpu_time = false;
  std::optional<rng_type> only;  // only this generator's rows
  double lambda = 10;            // Poisson mean
};

struct bench_row {
  rng_type type = rng_type::philox4_32_10;
  distribution dist = distribution::raw;
  unsigned threads = 1;
  double keel_gsps = 0;
  std::optional<double> curand_gsps;  // none without libcurand
};

// The rows in their fixed order (Philox, XORWOW, MRG32k3a, MT19937, Sobol32, scrambled
// Sobol32, MTGP32 for raw, uniform and normal, then every generator's Poisson), each passed to
// `on_row` as soon as it is measured; MTGP32's and scrambled Sobol32's rows are left out
// without their tables (keel::invalid_argument, saying why, when `only` names one of them).
// One-thread rows only when the machine has one hardware thread or with cpu_time. Throws
// keel::invalid_argument or keel::backend_error when a generator refuses a call.
std::vector<bench_row> run_bench(const bench_options& o,
                                 const std::function<void(const bench_row&)>& on_row = {});

// "philox4_32_10     raw      threads  1  keel   1.234 G/s  curand   1.000 G/s  ratio   1.23"
// (curand and ratio 0 without libcurand) and a newline.
std::string to_text(const bench_row& row);
// count, lambda, simd, libcurand (its version, 0 without it), clock ("thread-cpu" or
// "wall"), results (generator, dist, threads, keel_gsps, curand_gsps and ratio, both null
// without libcurand).
nlohmann::json to_json(const bench_options& options, const std::vector<bench_row>& rows);

}  // namespace keel::random
