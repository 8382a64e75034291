// `keel rand`: cuRAND-compatible random numbers on the CPU (bit for bit libcurand's host
// generator), their verification against libcurand, a side-by-side benchmark and a
// statistical battery. The logic lives in keel::random (values.hpp, verify_report.hpp,
// table_export.hpp, bench.hpp, battery.hpp); this file parses and prints.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli.hpp"
#include "keel/random/battery.hpp"
#include "keel/random/bench.hpp"
#include "keel/random/poisson.hpp"
#include "keel/random/table_export.hpp"
#include "keel/random/values.hpp"
#include "keel/random/verify_report.hpp"

namespace keel::cli {
namespace {

namespace kr = keel::random;

// --lambda: libcurand's Poisson range, (0, 400000]; NaN (which libcurand turns into zeros, or
// all ones on MTGP32 and Sobol') is refused by add_number as every NaN is.
CLI::Option* add_lambda(CLI::App* c, double& lambda, const std::string& help) {
  return add_number(c, "--lambda", lambda, help, 0.0, kr::k_poisson_max_lambda, true);
}

void add_dist_command(CLI::App* group, kr::distribution d) {
  auto o = std::make_shared<kr::values_request>();
  auto seed = std::make_shared<std::uint64_t>(0);
  CLI::App* c = group->add_subcommand(
      std::string(kr::to_string(d)),
      fmt::format("Generate {} values as libcurand's host generator does", kr::to_string(d)));
  c->add_option("--generator", o->generator,
                "philox4_32_10, xorwow, mrg32k3a, mtgp32, mt19937, sobol32, scrambled_sobol32")
      ->capture_default_str();
  auto* seed_option = add_number(c, "--seed", *seed, "Seed (curandSetPseudoRandomGeneratorSeed)")
                          ->capture_default_str();
  add_number(c, "--offset", o->offset, "Offset (curandSetGeneratorOffset)")->capture_default_str();
  c->add_option("--ordering", o->ordering, "default, best, legacy, seeded, dynamic, quasi_default")
      ->capture_default_str();
  add_number(c, "--count", o->count, "Number of values")->capture_default_str();
  add_number(c, "--dimensions", o->dimensions,
             "Dimensions of sobol32 / scrambled_sobol32 (1..20000)", 1u, 20000u)
      ->capture_default_str();
  if (d == kr::distribution::poisson) {
    add_lambda(c, o->params.lambda, "Poisson mean, in (0, 400000]")->capture_default_str();
  } else if (d != kr::distribution::raw && d != kr::distribution::uniform &&
             d != kr::distribution::uniform_double) {
    add_number(c, "--mean", o->params.mean, "Mean")->capture_default_str();
    add_number(c, "--stddev", o->params.stddev, "Standard deviation")->capture_default_str();
  }
  add_number(c, "--threads", o->threads, "Worker threads (0 = all)", 0u, 1024u)
      ->capture_default_str();
  c->add_option("--format", o->format, "txt, bin (little-endian values back to back) or npy")
      ->check(CLI::IsMember({"txt", "bin", "npy"}))
      ->capture_default_str();
  c->add_option("--out", o->out, "Output file (default stdout)");
  c->callback([o, seed, seed_option, d] {
    if (seed_option->count() > 0) o->seed = *seed;
    kr::write_random_values(d, *o);
  });
}

void add_verify_command(CLI::App* group) {
  struct options {
    kr::verify_request request;
    bool json = false, math = false, icdf = false;
    std::string write_golden;
  };
  auto o = std::make_shared<options>();
  kr::verify_request& r = o->request;
  CLI::App* verify =
      group->add_subcommand("verify", "Compare keel with libcurand's host generator bit for bit");
  verify->add_flag(
      "--full", r.full,
      "Every seed x offset x split (>= 16M values per generator x distribution x ordering)");
  add_number(verify, "--length", r.length, "Values per case (default 6000, --full 524288)", 1,
             std::size_t{1} << 24);
  add_number(verify, "--random-seed", r.random_seed,
             "The 'random' seed of the matrix (default: fixed, --full: fresh)");
  verify->add_option("--write-golden", o->write_golden,
                     "Write libcurand's answers for the matrix to FILE");
  verify->add_flag("--icdf", o->icdf,
                   "Instead: Sobol32 float and double normals for every 32-bit input (2 x 2^32 "
                   "values, minutes)");
  verify->add_option("--generator", r.generator,
                     "Compare only this generator's cases (e.g. mt19937)");
  add_number(
      verify, "--poisson-lambdas", r.poisson_lambdas,
      "Instead of the matrix: N random lambdas per generator x ordering, one Poisson call each", 1,
      1000000);
  verify->add_flag(
      "--math", o->math,
      "Instead: the SIMD logf/sincosf against glibc over every input Box-Muller can give them");
  add_json_flag(verify, o->json);
  verify->callback([o] {
    if (o->icdf) return print_checked(o->json, kr::run_icdf_check());
    if (o->math) return print_checked(o->json, kr::run_math_check());
    if (o->write_golden.empty()) return print_checked(o->json, kr::run_verify(o->request));
    kr::write_golden_file(o->request, o->write_golden);
    if (!o->json) std::cout << "wrote " << o->write_golden << '\n';
  });
}

void add_bench_command(CLI::App* group) {
  struct options {
    kr::bench_options lib;
    std::string generator;  // only this generator's rows (empty: all)
    bool json = false;
  };
  auto o = std::make_shared<options>();
  CLI::App* bench =
      group->add_subcommand("bench", "keel vs libcurand host generator, side by side");
  add_number(bench, "--count", o->lib.count, "Values per (generator, distribution)", 1,
             std::size_t{1} << 30)
      ->capture_default_str();
  add_number(bench, "--repeats", o->lib.repeats, "Best of N runs", 1, 1000)->capture_default_str();
  bench->add_option("--generator", o->generator, "Only this generator (e.g. mt19937)");
  add_lambda(bench, o->lib.lambda,
             "Poisson mean (table, inversion or normal approximation by generator: "
             "keel/random/poisson.hpp)")
      ->capture_default_str();
  bench->add_flag("--cpu-time", o->lib.cpu_time,
                  "Time by thread CPU time, which other processes disturb less than wall time "
                  "(1-thread rows only)");
  add_json_flag(bench, o->json);
  bench->callback([o] {
    if (!o->generator.empty()) o->lib.only = kr::parse_rng_type(o->generator);
    const auto rows = kr::run_bench(o->lib, [&](const kr::bench_row& r) {
      if (!o->json) std::cout << kr::to_text(r);
    });
    if (o->json) print_json(kr::to_json(o->lib, rows));
  });
}

// export-tables: the tables keel does not ship and reads at run time (NVIDIA's data), in
// keel's documented formats, for machines without libcurand or the CUDA toolkit.
void add_export_command(CLI::App* group) {
  auto r = std::make_shared<kr::table_export_request>();
  CLI::App* export_tables = group->add_subcommand(
      "export-tables", "Write the tables keel reads at run time (not shipped) to a file");
  export_tables->add_flag("--sobol", r->sobol,
                          "Scrambled Sobol32 direction vectors and shifts, from libcurand (for "
                          "KEEL_SOBOL_SCRAMBLE_TABLES)");
  export_tables->add_flag(
      "--mtgp32", r->mtgp32,
      "MTGP32's parameter sets (for KEEL_MTGP32_PARAMS; format: keel/random/mtgp32_tables.hpp)");
  export_tables->add_flag(
      "--erfcinv", r->erfcinv,
      "The coefficients of libcurand's double erfcinv (for KEEL_ERFCINV_COEFFICIENTS; format: "
      "keel/random/erfcinv_tables.hpp)");
  export_tables->add_option("--out", r->out, "Output file")->required();
  export_tables->callback([r] { std::cout << kr::to_text(kr::export_table(*r)); });
}

void add_test_command(CLI::App* group) {
  auto o = std::make_shared<std::pair<bool, std::size_t>>(false, std::size_t{1} << 20);
  CLI::App* test =
      group->add_subcommand("test", "Statistical battery and the per-thread-LCG inter-stream trap");
  add_number(test, "--samples", o->second, "Samples per distribution", 1000, std::size_t{1} << 28)
      ->capture_default_str();
  add_json_flag(test, o->first);
  test->callback([o] { print_checked(o->first, kr::run_battery(o->second)); });
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
  add_verify_command(group);
  add_bench_command(group);
  add_export_command(group);
  add_test_command(group);
}

}  // namespace keel::cli
