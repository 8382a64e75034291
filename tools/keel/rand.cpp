// `keel rand`: cuRAND-compatible random numbers on the CPU (bit for bit libcurand's host
// generator), their verification against libcurand, a side-by-side benchmark and a
// statistical battery.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <random>

#include "cli.hpp"
#include "keel/core/error.hpp"
#include "keel/core/output_file.hpp"
#include "keel/random/battery.hpp"
#include "keel/random/bench.hpp"
#include "keel/random/curand_reference.hpp"
#include "keel/random/erfcinv_tables.hpp"
#include "keel/random/generator.hpp"
#include "keel/random/mtgp32_tables.hpp"
#include "keel/random/poisson.hpp"
#include "keel/random/sobol_tables.hpp"
#include "keel/random/verify.hpp"

namespace keel::cli {
namespace {

namespace kr = keel::random;

void check(kr::status s, const char* what) {
  if (s == kr::status::success) return;
  if (s == kr::status::type_error || s == kr::status::out_of_range ||
      s == kr::status::length_not_multiple)
    throw keel::invalid_argument(fmt::format("{}: {}", what, kr::to_string(s)));
  throw keel::backend_error(fmt::format("{}: {}", what, kr::to_string(s)));
}

struct gen_options {
  std::string generator = "philox4_32_10";
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  std::string ordering = "default";
  std::size_t count = 10;
  std::uint32_t dimensions = 1;
  double mean = 0, stddev = 1, lambda = 1;
  unsigned threads = 0;
  std::string format = "txt";
  std::string out;
};

// Writes values chunk by chunk: `next(buffer, n)` fills the next n values. Large counts are
// thus streamed (e.g. into dieharder) without holding them all in memory; split calls give
// the same values as one call, so the output does not depend on the chunk size.
// A file named by --out is written through keel::output_file (a temporary renamed when the
// last value is written; a failed write stops at once, with the reason).
template <class Next>
void write_values(const gen_options& o, kr::distribution d, Next&& next) {
  std::optional<output_file> file;
  std::ostream* os = &std::cout;
  if (!o.out.empty()) {
    file.emplace(o.out);
    os = &file->stream();
  }
  const auto check_written = [&] {
    if (file) return file->check();
    if (!*os) throw keel::io_error(fmt::format("write to stdout failed: {}", std::strerror(errno)));
  };
  const std::size_t vs = kr::value_size(d);
  const bool integer = d == kr::distribution::raw || d == kr::distribution::poisson;
  if (o.format == "npy") {
    const char* descr = vs == 8 ? "<f8" : integer ? "<u4" : "<f4";
    std::string header =
        fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}", descr, o.count);
    const std::size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                  static_cast<unsigned char>(header.size() >> 8)};
    os->write("\x93NUMPY\x01\x00", 8);
    os->write(reinterpret_cast<const char*>(len), 2);
    os->write(header.data(), static_cast<std::streamsize>(header.size()));
  }
  // Even chunk sizes keep every generator's normals valid (pairs never straddle chunks);
  // quasi-random chunks are whole points (each chunk is one call, laid out as cuRAND does).
  const std::size_t k_chunk = (std::size_t{1} << 22) / o.dimensions * o.dimensions;
  std::vector<unsigned char> bytes;
  for (std::size_t done = 0; done < o.count;) {
    const std::size_t n = std::min(k_chunk, o.count - done);
    bytes.resize(n * vs);
    next(bytes.data(), n);
    done += n;
    if (o.format != "txt") {
      os->write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
    } else {
      std::string text;
      for (std::size_t i = 0; i < n; ++i) {
        const unsigned char* p = bytes.data() + i * vs;
        if (vs == 8) {
          double v;
          std::memcpy(&v, p, 8);
          text += fmt::format("{:.17g}\n", v);
        } else if (integer) {
          std::uint32_t v;
          std::memcpy(&v, p, 4);
          text += fmt::format("{}\n", v);
        } else {
          float v;
          std::memcpy(&v, p, 4);
          text += fmt::format("{:.9g}\n", v);
        }
      }
      *os << text;
    }
    check_written();
  }
  if (file) return file->commit();
  os->flush();
  check_written();
}

// --lambda: libcurand's Poisson range, (0, 400000]; NaN (which libcurand turns into zeros, or
// all ones on MTGP32 and Sobol') is refused by add_number as every NaN is.
CLI::Option* add_lambda(CLI::App* c, double& lambda, const std::string& help) {
  return add_number(c, "--lambda", lambda, help, 0.0, kr::k_poisson_max_lambda, true);
}

void add_dist_command(CLI::App* group, kr::distribution d) {
  auto o = std::make_shared<gen_options>();
  CLI::App* c = group->add_subcommand(
      std::string(kr::to_string(d)),
      fmt::format("Generate {} values as libcurand's host generator does", kr::to_string(d)));
  c->add_option("--generator", o->generator,
                "philox4_32_10, xorwow, mrg32k3a, mtgp32, mt19937, sobol32, scrambled_sobol32")
      ->capture_default_str();
  add_number(c, "--seed", o->seed, "Seed (curandSetPseudoRandomGeneratorSeed)")
      ->capture_default_str();
  add_number(c, "--offset", o->offset, "Offset (curandSetGeneratorOffset)")->capture_default_str();
  c->add_option("--ordering", o->ordering, "default, best, legacy, seeded, dynamic, quasi_default")
      ->capture_default_str();
  add_number(c, "--count", o->count, "Number of values")->capture_default_str();
  add_number(c, "--dimensions", o->dimensions,
             "Dimensions of sobol32 / scrambled_sobol32 (1..20000)", 1u, 20000u)
      ->capture_default_str();
  if (d == kr::distribution::poisson) {
    add_lambda(c, o->lambda, "Poisson mean, in (0, 400000]")->capture_default_str();
  } else if (d != kr::distribution::raw && d != kr::distribution::uniform &&
             d != kr::distribution::uniform_double) {
    add_number(c, "--mean", o->mean, "Mean")->capture_default_str();
    add_number(c, "--stddev", o->stddev, "Standard deviation")->capture_default_str();
  }
  add_number(c, "--threads", o->threads, "Worker threads (0 = all)", 0u, 1024u)
      ->capture_default_str();
  c->add_option("--format", o->format, "txt, bin (little-endian values back to back) or npy")
      ->check(CLI::IsMember({"txt", "bin", "npy"}))
      ->capture_default_str();
  c->add_option("--out", o->out, "Output file (default stdout)");
  c->callback([c, o, d] {
    const kr::rng_type type = kr::parse_rng_type(o->generator);
    kr::generator g(type);
    g.set_threads(o->threads);
    const kr::ordering order = kr::parse_ordering(o->ordering);
    if (order != kr::ordering::pseudo_default) check(g.set_ordering(order), "set ordering");
    if (kr::is_quasi(type)) {
      if (c->count("--seed") > 0)
        throw keel::invalid_argument(o->generator + " is quasi-random and takes no --seed");
      check(g.set_dimensions(o->dimensions), "set dimensions");
      if (o->count % o->dimensions != 0)
        throw keel::invalid_argument(fmt::format("--count {} is not a multiple of --dimensions {}",
                                                 o->count, o->dimensions));
    } else {
      if (o->dimensions != 1) check(g.set_dimensions(o->dimensions), "set dimensions");
      check(g.set_seed(o->seed), "set seed");
    }
    // Only when asked: MT19937 refuses any offset (as libcurand), even 0.
    if (o->offset != 0) check(g.set_offset(o->offset), "set offset");
    write_values(*o, d, [&](unsigned char* out, std::size_t n) {
      check(kr::generate(g, d, out, n, {o->mean, o->stddev, o->lambda}), "generate");
    });
  });
}

// ---- verify -------------------------------------------------------------------------------

struct verify_options {
  bool full = false, json = false, math = false, icdf = false;
  std::size_t length = 0;
  std::string write_golden;
  std::string generator;  // only this generator's cases (empty: all)
  std::optional<std::uint64_t> random_seed;
  std::size_t poisson_lambdas = 0;
};

// Exhaustive check of the SIMD logf/sincosf against glibc (no libcurand needed).
void run_math_check(bool json) {
  const auto start = std::chrono::steady_clock::now();
  const auto checks = kr::check_vector_math();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json levels = nlohmann::json::array();
  std::uint64_t bad = 0;
  for (const auto& m : checks) {
    bad += m.logf_mismatches + m.sincosf_mismatches;
    levels.push_back({{"simd", m.level},
                      {"logf_inputs", m.logf_inputs},
                      {"logf_mismatches", m.logf_mismatches},
                      {"sincosf_inputs", m.sincosf_inputs},
                      {"sincosf_mismatches", m.sincosf_mismatches}});
    if (!json)
      std::cout << fmt::format(
          "{}: logf {} inputs, {} differ from glibc; sincosf {} inputs, {} differ{}\n", m.level,
          m.logf_inputs, m.logf_mismatches, m.sincosf_inputs, m.sincosf_mismatches,
          m.logf_mismatches + m.sincosf_mismatches
              ? fmt::format(" (first at float bits {:08x})", m.first_mismatch_bits)
              : "");
  }
  if (json)
    print_json({{"levels", levels}, {"seconds", secs}});
  else if (checks.empty())
    std::cout << "no SIMD level on this CPU: the scalar path calls glibc itself\n";
  else
    std::cout << fmt::format("({:.1f} s)\n", secs);
  if (bad)
    throw keel::backend_error(fmt::format("{} vector logf/sincosf results differ from glibc", bad));
}

void run_verify(const verify_options& o) {
  if (o.math) return run_math_check(o.json);
  const auto& ref = kr::curand_reference::get();
  const std::size_t length = o.length ? o.length : (o.full ? (std::size_t{1} << 19) : 6000);
  const std::uint64_t rseed =
      o.random_seed
          ? *o.random_seed
          : (o.full ? std::random_device{}() * 0x9E3779B97F4A7C15ull : 0x5eed5eed12345678ull);
  nlohmann::json doc;
  doc["libcurand"] = ref.available() ? nlohmann::json(ref.version()) : nlohmann::json(nullptr);
  doc["simd"] = kr::simd_level();
  doc["mtgp32_tables"] = kr::mtgp32_default_tables().description;
  doc["erfcinv_tables"] = kr::erfcinv_default_tables().description;
  if (!o.write_golden.empty()) {
    if (!ref.available()) throw keel::backend_error(ref.description());
    write_output_file(o.write_golden, [&](std::ostream& out) {
      out << "# libcurand " << ref.version()
          << " host generator answers: name count status fnv1a64 first-values\n";
      for (const auto& c : kr::standard_cases(length, o.full, rseed))
        out << kr::golden_line(c, kr::run_curand(c)) << '\n';
    });
    if (!o.json) std::cout << "wrote " << o.write_golden << '\n';
    return;
  }
  if (!ref.available()) throw keel::backend_error(ref.description());
  const bool filtered = !o.generator.empty();
  const kr::rng_type only =
      filtered ? kr::parse_rng_type(o.generator) : kr::rng_type::pseudo_default;
  if (!o.json) {
    if (!kr::mtgp32_default_tables().tables)
      std::cout << "mtgp32 skipped: " << kr::mtgp32_default_tables().description << '\n';
    if (kr::erfcinv_default_tables().tables)
      std::cout << "erfcinv coefficients: " << kr::erfcinv_default_tables().description << '\n';
    else
      std::cout << "double inverse-CDF normals skipped: "
                << kr::erfcinv_default_tables().description << '\n';
  }
  std::size_t cases = 0, failed = 0, values = 0;
  nlohmann::json failures = nlohmann::json::array();
  const auto start = std::chrono::steady_clock::now();
  const auto all_cases = o.poisson_lambdas
                             ? kr::poisson_sweep_cases(o.poisson_lambdas, length, rseed)
                             : kr::standard_cases(length, o.full, rseed);
  for (const auto& c : all_cases) {
    if (filtered && c.type != only) continue;
    const auto ours = kr::run_keel(c, 0);
    const auto theirs = kr::run_curand(c);
    ++cases;
    values += c.count();
    if (const auto m = kr::compare(ours, theirs, kr::value_size(c.dist))) {
      ++failed;
      failures.push_back({{"case", c.name()},
                          {"mismatches", m->count},
                          {"first", m->first_index},
                          {"keel_status", static_cast<int>(ours.first_error)},
                          {"curand_status", static_cast<int>(theirs.first_error)}});
      if (!o.json)
        std::cout << fmt::format("MISMATCH {}: {} values, first at {}\n", c.name(), m->count,
                                 m->first_index);
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  doc["cases"] = cases;
  doc["values"] = values;
  doc["failed_cases"] = failed;
  doc["failures"] = failures;
  doc["random_seed"] = rseed;
  doc["seconds"] = secs;
  if (o.json)
    print_json(doc);
  else
    std::cout << fmt::format(
        "{} cases, {} values, {} failed cases ({:.1f} s, random seed {}, simd {})\n", cases, values,
        failed, secs, rseed, kr::simd_level());
  if (failed)
    throw keel::backend_error(fmt::format("{} of {} cases differ from libcurand", failed, cases));
}

// Every 32-bit input of the Sobol' inverse-CDF normals: dimension 1 visits each word once over
// indices 0..2^32-1. keel's float and double normals against libcurand's, value by value.
void run_verify_icdf(bool json) {
  const auto& ref = kr::curand_reference::get();
  if (!ref.available()) throw keel::backend_error(ref.description());
  constexpr std::size_t k_chunk = std::size_t{1} << 24;
  constexpr std::uint64_t k_inputs = std::uint64_t{1} << 32;
  // 64-byte aligned: libcurand's double paths fault on misaligned pointers.
  std::unique_ptr<unsigned char, void (*)(void*)> ours(
      static_cast<unsigned char*>(std::aligned_alloc(64, k_chunk * 8)), std::free),
      theirs(static_cast<unsigned char*>(std::aligned_alloc(64, k_chunk * 8)), std::free);
  if (!ours || !theirs) throw std::bad_alloc();
  nlohmann::json rows = nlohmann::json::array();
  std::uint64_t differing = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto d : {kr::distribution::normal, kr::distribution::normal_double}) {
    kr::generator g(kr::rng_type::sobol32);
    std::unique_ptr<kr::curand_generator> c;
    check(ref.create_host_generator(kr::rng_type::sobol32, c), "curandCreateGeneratorHost");
    const std::size_t vs = kr::value_size(d);
    std::uint64_t count = 0, max_ulp = 0;
    for (std::uint64_t done = 0; done < k_inputs; done += k_chunk) {
      check(kr::generate(g, d, ours.get(), k_chunk, {0.0, 1.0, 1.0}), "keel");
      check(kr::generate(*c, d, theirs.get(), k_chunk, {0.0, 1.0, 1.0}), "curand");
      if (std::memcmp(ours.get(), theirs.get(), k_chunk * vs) == 0) continue;
      for (std::size_t i = 0; i < k_chunk; ++i) {
        std::uint64_t a = 0, b = 0;
        std::memcpy(&a, ours.get() + i * vs, vs);
        std::memcpy(&b, theirs.get() + i * vs, vs);
        if (a == b) continue;
        ++count;
        max_ulp = std::max(max_ulp, a > b ? a - b : b - a);  // same sign: the ULP distance
      }
    }
    differing += count;
    rows.push_back({{"dist", std::string(kr::to_string(d))},
                    {"inputs", k_inputs},
                    {"differing", count},
                    {"max_ulp", max_ulp}});
    if (!json)
      std::cout << fmt::format("sobol32 {}: {} inputs, {} differ from libcurand (max {} ULP)\n",
                               kr::to_string(d), k_inputs, count, max_ulp);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (json)
    print_json({{"icdf", rows}, {"seconds", secs}, {"simd", kr::simd_level()}});
  else
    std::cout << fmt::format("{:.1f} s, simd {}\n", secs, kr::simd_level());
  if (differing)
    throw keel::backend_error(fmt::format("{} Sobol' normals differ from libcurand", differing));
}

// ---- bench --------------------------------------------------------------------------------

struct bench_options {
  bool json = false;
  kr::bench_options lib;
  std::string generator;  // only this generator's rows (empty: all)
};

void run_bench(bench_options o) {
  if (!o.generator.empty()) o.lib.only = kr::parse_rng_type(o.generator);
  nlohmann::json results = nlohmann::json::array();
  kr::run_bench(o.lib, [&](const kr::bench_row& r) {
    const auto na = [](std::optional<double> v) {
      return v ? nlohmann::json(*v) : nlohmann::json();
    };
    results.push_back({{"generator", std::string(kr::to_string(r.type))},
                       {"dist", std::string(kr::to_string(r.dist))},
                       {"threads", r.threads},
                       {"keel_gsps", r.keel_gsps},
                       {"curand_gsps", na(r.curand_gsps)},
                       {"ratio", na(r.curand_gsps ? std::optional(r.keel_gsps / *r.curand_gsps)
                                                  : std::nullopt)}});
    const double curand = r.curand_gsps.value_or(0.0);
    if (!o.json)
      std::cout << fmt::format(
          "{:14} {:8} threads {:2}  keel {:7.3f} G/s  curand {:7.3f} G/s  ratio {:6.2f}\n",
          kr::to_string(r.type), kr::to_string(r.dist), r.threads, r.keel_gsps, curand,
          curand > 0 ? r.keel_gsps / curand : 0.0);
  });
  const auto& ref = kr::curand_reference::get();
  if (o.json)
    print_json({{"count", o.lib.count},
                {"lambda", o.lib.lambda},
                {"simd", kr::simd_level()},
                {"libcurand", ref.available() ? ref.version() : 0},
                {"clock", o.lib.cpu_time ? "thread-cpu" : "wall"},
                {"results", results}});
}

// ---- export-tables ------------------------------------------------------------------------

// Scrambled Sobol32's tables (NVIDIA's data, not shipped by keel) from libcurand, for
// KEEL_SOBOL_SCRAMBLE_TABLES on machines without libcurand.
void export_sobol_tables(const std::string& out) {
  const auto& ref = kr::curand_reference::get();
  if (!ref.available())
    throw keel::backend_error("export-tables --sobol needs libcurand: " + ref.description());
  kr::write_sobol32_scramble_tables(out, kr::sobol32_scramble_tables_from_curand());
  std::cout << fmt::format("wrote {}: scrambled Sobol32 tables of libcurand {} ({} dimensions)\n",
                           out, ref.version(), kr::k_sobol32_max_dimensions);
}

// ---- test ---------------------------------------------------------------------------------

void run_stat_tests(bool json, std::size_t n) {
  const kr::battery_report b = kr::run_battery(n);
  auto row = [](const kr::test_result& r) {
    return nlohmann::json{{"test", r.name}, {"statistic", r.statistic}, {"p", r.p_value}};
  };
  if (json) {
    nlohmann::json battery = nlohmann::json::array(), streams_doc;
    for (const auto& r : b.battery) battery.push_back(row(r));
    streams_doc["lcg_per_thread_seed"] = {row(b.lcg_differences), row(b.lcg_correlation)};
    streams_doc["philox_subsequences"] = {row(b.philox_differences), row(b.philox_correlation)};
    print_json({{"samples", n},
                {"generator", "philox4_32_10"},
                {"alpha", b.alpha},
                {"battery", battery},
                {"inter_stream", streams_doc},
                {"streams", b.streams},
                {"steps", b.steps},
                {"battery_pass", b.battery_pass},
                {"lcg_fails_philox_passes", b.trap_shown}});
  } else {
    std::cout << fmt::format("philox4_32_10, {} samples (alpha {}):\n", n, b.alpha);
    for (const auto& r : b.battery)
      std::cout << fmt::format("  {:45} {:12.4f}  p = {:.4g}\n", r.name, r.statistic, r.p_value);
    std::cout << fmt::format("{} streams seeded 0..{}, {} steps each:\n", b.streams, b.streams - 1,
                             b.steps);
    for (const auto* r : {&b.lcg_differences, &b.lcg_correlation})
      std::cout << fmt::format("  LCG per thread  {:52} {:14.2f}  p = {:.4g}\n", r->name,
                               r->statistic, r->p_value);
    for (const auto* r : {&b.philox_differences, &b.philox_correlation})
      std::cout << fmt::format("  Philox subseq.  {:52} {:14.2f}  p = {:.4g}\n", r->name,
                               r->statistic, r->p_value);
    std::cout << (b.battery_pass ? "battery: pass\n" : "battery: FAIL\n")
              << (b.trap_shown ? "inter-stream: LCG fails, Philox passes\n"
                               : "inter-stream: unexpected outcome\n");
  }
  if (!b.battery_pass || !b.trap_shown) throw keel::backend_error("statistical battery failed");
}

}  // namespace

void add_rand_commands(CLI::App& root) {
  CLI::App* group =
      root.add_subcommand("rand", "cuRAND-compatible random numbers on CPU, OpenCL and CUDA");
  group->require_subcommand(1);
  for (auto d :
       {kr::distribution::raw, kr::distribution::uniform, kr::distribution::uniform_double,
        kr::distribution::normal, kr::distribution::normal_double, kr::distribution::log_normal,
        kr::distribution::log_normal_double, kr::distribution::poisson})
    add_dist_command(group, d);

  auto vo = std::make_shared<verify_options>();
  CLI::App* verify =
      group->add_subcommand("verify", "Compare keel with libcurand's host generator bit for bit");
  verify->add_flag(
      "--full", vo->full,
      "Every seed x offset x split (>= 16M values per generator x distribution x ordering)");
  add_number(verify, "--length", vo->length, "Values per case (default 6000, --full 524288)", 1,
             std::size_t{1} << 24);
  add_number(verify, "--random-seed", vo->random_seed,
             "The 'random' seed of the matrix (default: fixed, --full: fresh)");
  verify->add_option("--write-golden", vo->write_golden,
                     "Write libcurand's answers for the matrix to FILE");
  verify->add_flag("--icdf", vo->icdf,
                   "Instead: Sobol32 float and double normals for every 32-bit input (2 x 2^32 "
                   "values, minutes)");
  verify->add_option("--generator", vo->generator,
                     "Compare only this generator's cases (e.g. mt19937)");
  add_number(
      verify, "--poisson-lambdas", vo->poisson_lambdas,
      "Instead of the matrix: N random lambdas per generator x ordering, one Poisson call each", 1,
      1000000);
  verify->add_flag(
      "--math", vo->math,
      "Instead: the SIMD logf/sincosf against glibc over every input Box-Muller can give them");
  add_json_flag(verify, vo->json);
  verify->callback([vo] { vo->icdf ? run_verify_icdf(vo->json) : run_verify(*vo); });

  auto bo = std::make_shared<bench_options>();
  CLI::App* bench =
      group->add_subcommand("bench", "keel vs libcurand host generator, side by side");
  add_number(bench, "--count", bo->lib.count, "Values per (generator, distribution)", 1,
             std::size_t{1} << 30)
      ->capture_default_str();
  add_number(bench, "--repeats", bo->lib.repeats, "Best of N runs", 1, 1000)->capture_default_str();
  bench->add_option("--generator", bo->generator, "Only this generator (e.g. mt19937)");
  add_lambda(bench, bo->lib.lambda,
             "Poisson mean (table, inversion or normal approximation by generator: "
             "keel/random/poisson.hpp)")
      ->capture_default_str();
  bench->add_flag("--cpu-time", bo->lib.cpu_time,
                  "Time by thread CPU time, which other processes disturb less than wall time "
                  "(1-thread rows only)");
  add_json_flag(bench, bo->json);
  bench->callback([bo] { run_bench(*bo); });

  // export-tables: the tables keel does not ship and reads at run time (NVIDIA's data), in
  // keel's documented formats, for machines without libcurand or the CUDA toolkit.
  struct export_options {
    bool sobol = false, mtgp32 = false, erfcinv = false;
    std::string out;
  };
  auto eo = std::make_shared<export_options>();
  CLI::App* export_tables = group->add_subcommand(
      "export-tables", "Write the tables keel reads at run time (not shipped) to a file");
  export_tables->add_flag("--sobol", eo->sobol,
                          "Scrambled Sobol32 direction vectors and shifts, from libcurand (for "
                          "KEEL_SOBOL_SCRAMBLE_TABLES)");
  export_tables->add_flag(
      "--mtgp32", eo->mtgp32,
      "MTGP32's parameter sets (for KEEL_MTGP32_PARAMS; format: keel/random/mtgp32_tables.hpp)");
  export_tables->add_flag(
      "--erfcinv", eo->erfcinv,
      "The coefficients of libcurand's double erfcinv (for KEEL_ERFCINV_COEFFICIENTS; format: "
      "keel/random/erfcinv_tables.hpp)");
  export_tables->add_option("--out", eo->out, "Output file")->required();
  export_tables->callback([eo] {
    if (eo->sobol + eo->mtgp32 + eo->erfcinv != 1)
      throw keel::invalid_argument(
          "export-tables: name one table to export (--sobol, --mtgp32 or --erfcinv)");
    if (eo->sobol) return export_sobol_tables(eo->out);
    if (eo->erfcinv) {
      const auto& lookup = kr::erfcinv_default_tables();
      if (!lookup.tables) throw keel::invalid_argument(lookup.description);
      return write_output_file(
          eo->out, [&](std::ostream& out) { kr::write_erfcinv_tables(out, *lookup.tables); });
    }
    const auto& lookup = kr::mtgp32_default_tables();
    if (!lookup.tables) throw keel::invalid_argument(lookup.description);
    write_output_file(eo->out,
                      [&](std::ostream& out) { kr::write_mtgp32_tables(out, *lookup.tables); });
  });

  auto to = std::make_shared<std::pair<bool, std::size_t>>(false, std::size_t{1} << 20);
  CLI::App* test =
      group->add_subcommand("test", "Statistical battery and the per-thread-LCG inter-stream trap");
  add_number(test, "--samples", to->second, "Samples per distribution", 1000, std::size_t{1} << 28)
      ->capture_default_str();
  add_json_flag(test, to->first);
  test->callback([to] { run_stat_tests(to->first, to->second); });
}

}  // namespace keel::cli
