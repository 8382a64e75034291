#include "keel/random/generator.hpp"
#include "keel/core/enum_names.hpp"

#include <algorithm>
#include <thread>
#include <vector>

#include "cpu_kernels/simd.hpp"
#include "engines/engines.hpp"
#include "engines/poisson_engine.hpp"
#include "keel/core/error.hpp"
#include "keel/random/mtgp32_tables.hpp"
#include "keel/random/sobol_tables.hpp"

namespace keel::random {

namespace detail {

void parallel_for(std::size_t items, unsigned workers,
                  const std::function<void(std::size_t, std::size_t)>& fn) {
  workers = static_cast<unsigned>(std::min<std::size_t>(workers, items));
  if (workers <= 1) {
    if (items > 0) fn(0, items);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  const std::size_t per = items / workers, extra = items % workers;
  std::size_t begin = 0;
  for (unsigned w = 0; w < workers; ++w) {
    const std::size_t end = begin + per + (w < extra ? 1 : 0);
    if (w + 1 == workers)
      fn(begin, end);
    else
      pool.emplace_back(fn, begin, end);
    begin = end;
  }
  for (auto& t : pool) t.join();
}

unsigned workers_for(std::size_t n, unsigned threads) {
  constexpr std::size_t k_min_per_worker = std::size_t{1} << 18;
  if (threads <= 1 || n < 2 * k_min_per_worker) return 1;
  return static_cast<unsigned>(std::min<std::size_t>(threads, n / k_min_per_worker));
}

}  // namespace detail

namespace {

std::unique_ptr<detail::engine> make_engine(rng_type type) {
  switch (type) {
    case rng_type::pseudo_default:
    case rng_type::xorwow: return detail::make_xorwow_engine();
    case rng_type::mrg32k3a: return detail::make_mrg32k3a_engine();
    case rng_type::philox4_32_10: return detail::make_philox_engine();
    case rng_type::quasi_default:
    case rng_type::sobol32: return detail::make_sobol32_engine();
    case rng_type::scrambled_sobol32: return detail::make_scrambled_sobol32_engine();
    case rng_type::mt19937: return detail::make_mt19937_engine();
    case rng_type::mtgp32: return detail::make_mtgp32_engine();
    default: return nullptr;
  }
}

unsigned resolve_threads(unsigned threads) {
  if (threads != 0) return threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

generator::generator(rng_type type)
    : type_(type), engine_(make_engine(type)), poisson_(std::make_unique<detail::poisson_cache>()) {
  std::string why;
  if (!engine_ && type == rng_type::scrambled_sobol32 && !sobol32_scramble_tables(&why))
    throw invalid_argument("keel::random: " + why);
  if (!engine_ && type == rng_type::mtgp32)
    throw invalid_argument("keel::random: " + mtgp32_default_tables().description);
  if (!engine_)
    throw invalid_argument("keel::random: generator type " + std::string(to_string(type)) +
                           " is not implemented");
}
generator::~generator() = default;
generator::generator(generator&&) noexcept = default;
generator& generator::operator=(generator&&) noexcept = default;

status generator::create(rng_type type, std::unique_ptr<generator>& out) {
  if (!make_engine(type)) return status::type_error;
  out = std::make_unique<generator>(type);
  return status::success;
}

status generator::set_seed(std::uint64_t seed) {
  // Quasi-random generators have no seed: libcurand answers TYPE_ERROR.
  if (is_quasi(type_)) return status::type_error;
  return engine_->set_seed(seed);
}
status generator::set_offset(std::uint64_t offset) { return engine_->set_offset(offset); }
status generator::set_ordering(ordering order) { return engine_->set_ordering(order); }
status generator::set_dimensions(std::uint32_t dimensions) {
  return engine_->set_dimensions(dimensions);
}

#define KEEL_RANDOM_REQUEST(KIND, OUT, N, MEAN, SD) \
  engine_->generate(                                \
      detail::request{detail::kind::KIND, OUT, N, MEAN, SD, resolve_threads(threads_)})

status generator::generate(std::uint32_t* out, std::size_t n) {
  return KEEL_RANDOM_REQUEST(u32, out, n, 0, 1);
}
status generator::generate_uniform(float* out, std::size_t n) {
  return KEEL_RANDOM_REQUEST(uniform, out, n, 0, 1);
}
status generator::generate_uniform_double(double* out, std::size_t n) {
  return KEEL_RANDOM_REQUEST(uniform_double, out, n, 0, 1);
}
status generator::generate_normal(float* out, std::size_t n, float mean, float stddev) {
  return KEEL_RANDOM_REQUEST(normal, out, n, mean, stddev);
}
status generator::generate_normal_double(double* out, std::size_t n, double mean, double stddev) {
  return KEEL_RANDOM_REQUEST(normal_double, out, n, mean, stddev);
}
status generator::generate_log_normal(float* out, std::size_t n, float mean, float stddev) {
  return KEEL_RANDOM_REQUEST(log_normal, out, n, mean, stddev);
}
status generator::generate_log_normal_double(double* out, std::size_t n, double mean,
                                             double stddev) {
  return KEEL_RANDOM_REQUEST(log_normal_double, out, n, mean, stddev);
}
#undef KEEL_RANDOM_REQUEST

status generator::generate_poisson(std::uint32_t* out, std::size_t n, double lambda) {
  return detail::generate_poisson(*engine_, type_, *poisson_, out, n, lambda,
                                  resolve_threads(threads_));
}

const char* simd_level() noexcept {
  switch (detail::simd::active_level()) {
    case detail::simd::level::avx512: return "avx512";
    case detail::simd::level::avx2: return "avx2";
    default: return "scalar";
  }
}

namespace {
constexpr enum_entry<status> k_status_entries[] = {
    {status::success, "CURAND_STATUS_SUCCESS"},
    {status::version_mismatch, "CURAND_STATUS_VERSION_MISMATCH"},
    {status::not_initialized, "CURAND_STATUS_NOT_INITIALIZED"},
    {status::allocation_failed, "CURAND_STATUS_ALLOCATION_FAILED"},
    {status::type_error, "CURAND_STATUS_TYPE_ERROR"},
    {status::out_of_range, "CURAND_STATUS_OUT_OF_RANGE"},
    {status::length_not_multiple, "CURAND_STATUS_LENGTH_NOT_MULTIPLE"},
    {status::double_precision_required, "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED"},
    {status::launch_failure, "CURAND_STATUS_LAUNCH_FAILURE"},
    {status::preexisting_failure, "CURAND_STATUS_PREEXISTING_FAILURE"},
    {status::initialization_failed, "CURAND_STATUS_INITIALIZATION_FAILED"},
    {status::arch_mismatch, "CURAND_STATUS_ARCH_MISMATCH"},
    {status::internal_error, "CURAND_STATUS_INTERNAL_ERROR"},
};
constexpr enum_names<status> k_status_names{"status", k_status_entries, name_case::exact,
                                            "unknown status"};
}  // namespace

std::string_view to_string(status s) noexcept { return k_status_names.name(s); }

namespace {
constexpr enum_entry<rng_type> k_rng_type_entries[] = {
    {rng_type::pseudo_default, "pseudo_default"},
    {rng_type::xorwow, "xorwow"},
    {rng_type::mrg32k3a, "mrg32k3a"},
    {rng_type::mtgp32, "mtgp32"},
    {rng_type::mt19937, "mt19937"},
    {rng_type::philox4_32_10, "philox4_32_10"},
    {rng_type::quasi_default, "quasi_default"},
    {rng_type::sobol32, "sobol32"},
    {rng_type::scrambled_sobol32, "scrambled_sobol32"},
    {rng_type::sobol64, "sobol64"},
    {rng_type::scrambled_sobol64, "scrambled_sobol64"},
};
constexpr enum_names<rng_type> k_rng_type_names{"rng type", k_rng_type_entries, name_case::exact,
                                                "unknown"};
}  // namespace

std::string_view to_string(rng_type t) noexcept { return k_rng_type_names.name(t); }

namespace {
constexpr enum_entry<ordering> k_ordering_entries[] = {
    {ordering::pseudo_best, "best"},       {ordering::pseudo_default, "default"},
    {ordering::pseudo_seeded, "seeded"},   {ordering::pseudo_legacy, "legacy"},
    {ordering::pseudo_dynamic, "dynamic"}, {ordering::quasi_default, "quasi_default"},
};
constexpr enum_names<ordering> k_ordering_names{"ordering", k_ordering_entries, name_case::exact,
                                                "unknown"};
}  // namespace

std::string_view to_string(ordering o) noexcept { return k_ordering_names.name(o); }

ordering parse_ordering(std::string_view name) { return k_ordering_names.parse(name); }

namespace {
constexpr enum_entry<rng_type> k_generator_entries[] = {
    {rng_type::philox4_32_10, "philox4_32_10"},
    {rng_type::xorwow, "xorwow"},
    {rng_type::mrg32k3a, "mrg32k3a"},
    {rng_type::mtgp32, "mtgp32"},
    {rng_type::mt19937, "mt19937"},
    {rng_type::sobol32, "sobol32"},
    {rng_type::scrambled_sobol32, "scrambled_sobol32"},
};
constexpr enum_names<rng_type> k_generator_names{"generator", k_generator_entries};
}  // namespace

rng_type parse_rng_type(std::string_view name) { return k_generator_names.parse(name); }

}  // namespace keel::random
