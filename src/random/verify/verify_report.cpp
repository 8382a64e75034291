#include "keel/random/verify_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <ostream>
#include <random>

#include "keel/core/error.hpp"
#include "keel/core/output_file.hpp"
#include "keel/random/curand_reference.hpp"
#include "keel/random/erfcinv_tables.hpp"
#include "keel/random/generator_config.hpp"
#include "keel/random/mtgp32_tables.hpp"

namespace keel::random {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const curand_reference& required_curand() {
  const auto& ref = curand_reference::get();
  if (!ref.available()) throw backend_error(ref.description());
  return ref;
}

std::size_t case_length(const verify_request& r) {
  return r.length ? r.length : (r.full ? (std::size_t{1} << 19) : 6000);
}

std::uint64_t matrix_seed(const verify_request& r) {
  return r.random_seed
             ? *r.random_seed
             : (r.full ? std::random_device{}() * 0x9E3779B97F4A7C15ull : 0x5eed5eed12345678ull);
}

}  // namespace

verify_report run_verify(const verify_request& request) {
  const auto& ref = required_curand();
  const std::size_t length = case_length(request);
  verify_report rep;
  rep.random_seed = matrix_seed(request);
  rep.libcurand = ref.version();
  rep.simd = simd_level();
  rep.mtgp32_tables = mtgp32_default_tables().description;
  rep.erfcinv_tables = erfcinv_default_tables().description;
  const bool filtered = !request.generator.empty();
  const rng_type only = filtered ? parse_rng_type(request.generator) : rng_type::pseudo_default;
  if (!mtgp32_default_tables().tables) rep.notes.push_back("mtgp32 skipped: " + rep.mtgp32_tables);
  if (erfcinv_default_tables().tables)
    rep.notes.push_back("erfcinv coefficients: " + rep.erfcinv_tables);
  else
    rep.notes.push_back("double inverse-CDF normals skipped: " + rep.erfcinv_tables);
  const auto start = std::chrono::steady_clock::now();
  const auto cases = request.poisson_lambdas
                         ? poisson_sweep_cases(request.poisson_lambdas, length, rep.random_seed)
                         : standard_cases(length, request.full, rep.random_seed);
  for (const auto& c : cases) {
    if (filtered && c.type != only) continue;
    const auto ours = run_keel(c, 0);
    const auto theirs = run_curand(c);
    ++rep.cases;
    rep.values += c.count();
    if (const auto m = compare(ours, theirs, value_size(c.dist))) {
      ++rep.failed_cases;
      verify_failure f;
      f.name = c.name();
      f.mismatches = m->count;
      f.first = m->first_index;
      f.keel_status = ours.first_error;
      f.curand_status = theirs.first_error;
      rep.failures.push_back(std::move(f));
    }
  }
  rep.seconds = seconds_since(start);
  if (rep.failed_cases) {
    rep.failure = fmt::format("{} of {} cases differ from libcurand", rep.failed_cases, rep.cases);
  }
  return rep;
}

nlohmann::json to_json(const verify_report& r) {
  nlohmann::json failures = nlohmann::json::array();
  for (const verify_failure& f : r.failures) {
    failures.push_back({{"case", f.name},
                        {"mismatches", f.mismatches},
                        {"first", f.first},
                        {"keel_status", static_cast<int>(f.keel_status)},
                        {"curand_status", static_cast<int>(f.curand_status)}});
  }
  nlohmann::json doc;
  doc["libcurand"] = r.libcurand;
  doc["simd"] = r.simd;
  doc["mtgp32_tables"] = r.mtgp32_tables;
  doc["erfcinv_tables"] = r.erfcinv_tables;
  doc["cases"] = r.cases;
  doc["values"] = r.values;
  doc["failed_cases"] = r.failed_cases;
  doc["failures"] = failures;
  doc["random_seed"] = r.random_seed;
  doc["seconds"] = r.seconds;
  return doc;
}

std::string to_text(const verify_report& r) {
  std::string text;
  for (const std::string& note : r.notes) text += note + '\n';
  for (const verify_failure& f : r.failures)
    text += fmt::format("MISMATCH {}: {} values, first at {}\n", f.name, f.mismatches, f.first);
  text += fmt::format("{} cases, {} values, {} failed cases ({:.1f} s, random seed {}, simd {})\n",
                      r.cases, r.values, r.failed_cases, r.seconds, r.random_seed, r.simd);
  return text;
}

void write_golden_file(const verify_request& request, const std::string& path) {
  const std::size_t length = case_length(request);
  const std::uint64_t seed = matrix_seed(request);
  required_curand();
  write_golden_file(standard_cases(length, request.full, seed), path);
}

void write_golden_file(const std::vector<verify_case>& cases, const std::string& path) {
  const auto& ref = required_curand();
  write_output_file(path, [&](std::ostream& out) {
    out << "# libcurand " << ref.version()
        << " host generator answers: name count status fnv1a64 first-values\n";
    for (const auto& c : cases) out << golden_line(c, run_curand(c)) << '\n';
  });
}

icdf_report run_icdf_check(std::uint64_t inputs) {
  const auto& ref = required_curand();
  const std::size_t chunk =
      static_cast<std::size_t>(std::min<std::uint64_t>(std::uint64_t{1} << 24, inputs));
  // 64-byte aligned: libcurand's double paths fault on misaligned pointers.
  const std::size_t buffer = (std::max<std::size_t>(chunk, 1) * 8 + 63) / 64 * 64;
  std::unique_ptr<unsigned char, void (*)(void*)> ours(
      static_cast<unsigned char*>(std::aligned_alloc(64, buffer)), std::free),
      theirs(static_cast<unsigned char*>(std::aligned_alloc(64, buffer)), std::free);
  if (!ours || !theirs) throw std::bad_alloc();
  icdf_report rep;
  std::uint64_t differing = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto d : {distribution::normal, distribution::normal_double}) {
    generator g(rng_type::sobol32);
    std::unique_ptr<curand_generator> c;
    check_status(ref.create_host_generator(rng_type::sobol32, c), "curandCreateGeneratorHost");
    const std::size_t vs = value_size(d);
    icdf_row row;
    row.dist = d;
    row.inputs = inputs;
    for (std::uint64_t done = 0; done < inputs; done += chunk) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, inputs - done));
      check_status(generate(g, d, ours.get(), n, {0.0, 1.0, 1.0}), "keel");
      check_status(generate(*c, d, theirs.get(), n, {0.0, 1.0, 1.0}), "curand");
      if (std::memcmp(ours.get(), theirs.get(), n * vs) == 0) continue;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t a = 0, b = 0;
        std::memcpy(&a, ours.get() + i * vs, vs);
        std::memcpy(&b, theirs.get() + i * vs, vs);
        if (a == b) continue;
        ++row.differing;
        row.max_ulp = std::max(row.max_ulp, a > b ? a - b : b - a);  // same sign: ULP distance
      }
    }
    differing += row.differing;
    rep.rows.push_back(row);
  }
  rep.seconds = seconds_since(start);
  rep.simd = simd_level();
  if (differing) rep.failure = fmt::format("{} Sobol' normals differ from libcurand", differing);
  return rep;
}

nlohmann::json to_json(const icdf_report& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const icdf_row& row : r.rows) {
    rows.push_back({{"dist", std::string(to_string(row.dist))},
                    {"inputs", row.inputs},
                    {"differing", row.differing},
                    {"max_ulp", row.max_ulp}});
  }
  return {{"icdf", rows}, {"seconds", r.seconds}, {"simd", r.simd}};
}

std::string to_text(const icdf_report& r) {
  std::string text;
  for (const icdf_row& row : r.rows) {
    text += fmt::format("sobol32 {}: {} inputs, {} differ from libcurand (max {} ULP)\n",
                        to_string(row.dist), row.inputs, row.differing, row.max_ulp);
  }
  return text + fmt::format("{:.1f} s, simd {}\n", r.seconds, r.simd);
}

math_report run_math_check(std::uint32_t stride) {
  const auto start = std::chrono::steady_clock::now();
  math_report rep;
  rep.levels = check_vector_math(stride);
  rep.seconds = seconds_since(start);
  std::uint64_t bad = 0;
  for (const math_check& m : rep.levels) bad += m.logf_mismatches + m.sincosf_mismatches;
  if (bad) rep.failure = fmt::format("{} vector logf/sincosf results differ from glibc", bad);
  return rep;
}

nlohmann::json to_json(const math_report& r) {
  nlohmann::json levels = nlohmann::json::array();
  for (const math_check& m : r.levels) {
    levels.push_back({{"simd", m.level},
                      {"logf_inputs", m.logf_inputs},
                      {"logf_mismatches", m.logf_mismatches},
                      {"sincosf_inputs", m.sincosf_inputs},
                      {"sincosf_mismatches", m.sincosf_mismatches}});
  }
  return {{"levels", levels}, {"seconds", r.seconds}};
}

std::string to_text(const math_report& r) {
  std::string text;
  for (const math_check& m : r.levels) {
    text += fmt::format(
        "{}: logf {} inputs, {} differ from glibc; sincosf {} inputs, {} differ{}\n", m.level,
        m.logf_inputs, m.logf_mismatches, m.sincosf_inputs, m.sincosf_mismatches,
        m.logf_mismatches + m.sincosf_mismatches
            ? fmt::format(" (first at float bits {:08x})", m.first_mismatch_bits)
            : "");
  }
  if (r.levels.empty())
    return text + "no SIMD level on this CPU: the scalar path calls glibc itself\n";
  return text + fmt::format("({:.1f} s)\n", r.seconds);
}

}  // namespace keel::random
