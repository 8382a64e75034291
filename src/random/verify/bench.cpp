#include "keel/random/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/random/curand_reference.hpp"
#include "keel/random/mtgp32_tables.hpp"
#include "keel/random/sobol_tables.hpp"

namespace keel::random {
namespace {

void check(status s, const char* what) {
  if (s == status::success) return;
  if (s == status::type_error || s == status::out_of_range || s == status::length_not_multiple)
    throw keel::invalid_argument(fmt::format("{}: {}", what, to_string(s)));
  throw keel::backend_error(fmt::format("{}: {}", what, to_string(s)));
}

double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

template <class F>
double best_seconds(int repeats, bool cpu_time, F&& f) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    f();
    best = std::min(
        best, cpu_time
                  ? thread_cpu_seconds() - c0
                  : std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

constexpr std::pair<rng_type, distribution> k_cases[] = {
    {rng_type::philox4_32_10, distribution::raw},
    {rng_type::philox4_32_10, distribution::uniform},
    {rng_type::philox4_32_10, distribution::normal},
    {rng_type::philox4_32_10, distribution::normal_double},
    {rng_type::xorwow, distribution::raw},
    {rng_type::xorwow, distribution::uniform},
    {rng_type::xorwow, distribution::normal},
    {rng_type::xorwow, distribution::normal_double},
    {rng_type::mrg32k3a, distribution::uniform},
    {rng_type::mrg32k3a, distribution::normal},
    {rng_type::mrg32k3a, distribution::normal_double},
    {rng_type::mt19937, distribution::raw},
    {rng_type::mt19937, distribution::uniform},
    {rng_type::mt19937, distribution::normal},
    {rng_type::mt19937, distribution::normal_double},
    {rng_type::sobol32, distribution::raw},
    {rng_type::sobol32, distribution::uniform},
    {rng_type::sobol32, distribution::normal},
    {rng_type::sobol32, distribution::normal_double},
    {rng_type::scrambled_sobol32, distribution::raw},
    {rng_type::scrambled_sobol32, distribution::uniform},
    {rng_type::scrambled_sobol32, distribution::normal},
    {rng_type::scrambled_sobol32, distribution::normal_double},
    {rng_type::mtgp32, distribution::raw},
    {rng_type::mtgp32, distribution::uniform},
    {rng_type::mtgp32, distribution::normal},
    {rng_type::mtgp32, distribution::normal_double},
    {rng_type::philox4_32_10, distribution::poisson},
    {rng_type::xorwow, distribution::poisson},
    {rng_type::mrg32k3a, distribution::poisson},
    {rng_type::mt19937, distribution::poisson},
    {rng_type::mtgp32, distribution::poisson},
    {rng_type::sobol32, distribution::poisson},
    {rng_type::scrambled_sobol32, distribution::poisson},
};

// Why `type` cannot run here, or empty: MTGP32 and scrambled Sobol32 read tables keel does
// not ship (keel/random/mtgp32_tables.hpp, sobol_tables.hpp).
std::string missing_tables(rng_type type) {
  std::string why;
  if (type == rng_type::mtgp32 && !mtgp32_default_tables().tables)
    return mtgp32_default_tables().description;
  if (type == rng_type::scrambled_sobol32 && !sobol32_scramble_tables(&why)) return why;
  return {};
}

}  // namespace

std::vector<bench_row> run_bench(const bench_options& o,
                                 const std::function<void(const bench_row&)>& on_row) {
  const auto& ref = curand_reference::get();
  const unsigned all = std::max(1u, std::thread::hardware_concurrency());
  std::vector<unsigned char> buf;
  std::vector<bench_row> rows;
  const dist_params params{0.0, 1.0, o.lambda};
  for (const auto& [type, case_dist] : k_cases) {
    const distribution dist = case_dist;  // a plain variable: lambdas below capture it
    if (o.only && type != *o.only) continue;
    if (const std::string why = missing_tables(type); !why.empty()) {
      if (o.only) throw keel::invalid_argument("keel::random: " + why);
      continue;  // the full run goes on without it
    }
    buf.resize(o.count * value_size(dist));
    std::optional<double> curand_gsps;
    if (ref.available()) {
      std::unique_ptr<curand_generator> g;
      check(ref.create_host_generator(type, g), "curandCreateGeneratorHost");
      g->set_seed(1234);
      const double s = best_seconds(o.repeats, o.cpu_time, [&] {
        check(generate(*g, dist, buf.data(), o.count, params), "curand");
      });
      curand_gsps = o.count / s * 1e-9;
    }
    for (unsigned threads : {1u, all}) {
      if (threads == all && all == 1 && !rows.empty() && rows.back().threads == 1) continue;
      if (threads > 1 && o.cpu_time) continue;  // other threads' CPU time is not the caller's
      generator g(type);
      g.set_threads(threads);
      g.set_seed(1234);
      const double s = best_seconds(o.repeats, o.cpu_time, [&] {
        check(generate(g, dist, buf.data(), o.count, params), "keel");
      });
      rows.push_back({type, dist, threads, o.count / s * 1e-9, curand_gsps});
      if (on_row) on_row(rows.back());
    }
  }
  return rows;
}

std::string to_text(const bench_row& r) {
  const double curand = r.curand_gsps.value_or(0.0);
  return fmt::format(
      "{:17} {:8} threads {:2}  keel {:7.3f} G/s  curand {:7.3f} G/s  ratio {:6.2f}\n",
      to_string(r.type), to_string(r.dist), r.threads, r.keel_gsps, curand,
      curand > 0 ? r.keel_gsps / curand : 0.0);
}

nlohmann::json to_json(const bench_options& o, const std::vector<bench_row>& rows) {
  const auto na = [](std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json results = nlohmann::json::array();
  for (const bench_row& r : rows) {
    results.push_back({{"generator", std::string(to_string(r.type))},
                       {"dist", std::string(to_string(r.dist))},
                       {"threads", r.threads},
                       {"keel_gsps", r.keel_gsps},
                       {"curand_gsps", na(r.curand_gsps)},
                       {"ratio", na(r.curand_gsps ? std::optional(r.keel_gsps / *r.curand_gsps)
                                                  : std::nullopt)}});
  }
  const auto& ref = curand_reference::get();
  return {{"count", o.count},
          {"lambda", o.lambda},
          {"simd", simd_level()},
          {"libcurand", ref.available() ? ref.version() : 0},
          {"clock", o.cpu_time ? "thread-cpu" : "wall"},
          {"results", results}};
}

}  // namespace keel::random
