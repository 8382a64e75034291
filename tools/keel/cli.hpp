// Shared plumbing of the `keel` command line: one function per subcommand group adds its
// commands to the root app; run() parses, executes and maps every failure to one line on
// stderr and an exit code (0 ok, 1 internal failure, 2 bad input or usage). Commands report
// bad input by throwing keel::invalid_argument, keel::parse_error or keel::io_error.
// A command binds its options with the helpers below (add_number for every number,
// add_json_flag, add_gpu_option), calls one library function and prints what it returns with
// print_result: the library's to_json() document or its to_text().
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "keel/core/error.hpp"

#include <concepts>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace keel::cli {

inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_internal = 1;
inline constexpr int k_exit_usage = 2;

// Parses argv and runs the selected command; never throws, never aborts.
int run(CLI::App& app, int argc, char** argv);

// The whole `keel` command line (every group) on argv; returns the exit code. `program` is
// the command that starts keel again (for `python3 -m keel`: the interpreter, "-m", "keel");
// empty: this executable.
int run_keel(int argc, char** argv, std::vector<std::string> program = {});

// The command line being run: `program` runs keel again (commands that start ranks re-run
// it), `args` are the arguments run_keel was given (without the program name).
struct invocation {
  std::vector<std::string> program;
  std::vector<std::string> args;
};
const invocation& this_invocation();

// Ends the running command with `code` and nothing more on stderr: for a command that has
// already reported its outcome (a failed check, a job's exit code). run() returns the code.
[[noreturn]] inline void exit_quietly(int code) { throw CLI::RuntimeError(code); }

// Prints one JSON document (pretty, 2 spaces) and a newline on stdout; an ordered_json keeps
// its keys in insertion order.
void print_json(const nlohmann::json& document);
template <class Json>
requires std::same_as<Json, nlohmann::ordered_json>
void print_json(const Json& document) { std::cout << document.dump(2) << '\n'; }

// Prints a library result as the command's output: with --json its to_json() document
// (print_json), otherwise its to_text(result, text_options...) on stdout (both found next to
// the result's type).
template <class Result, class... TextOptions>
void print_result(bool json, const Result& result, const TextOptions&... text_options) {
  if (json)
    print_json(to_json(result));
  else
    std::cout << to_text(result, text_options...);
}

// print_result, then, for a check whose values differ (a non-empty result.failure), ends the
// command with that line as keel::backend_error (exit 1).
template <class Result>
void print_checked(bool json, const Result& result) {
  print_result(json, result);
  if (!result.failure.empty()) throw keel::backend_error(result.failure);
}

// Adds the conventional `--json` flag to a command.
inline CLI::Option* add_json_flag(CLI::App* command, bool& json) {
  return command->add_flag("--json", json, "Print one JSON document on stdout");
}

// Adds `--gpu NAME|FILE`: a name of the GPU database or a device file (keel perf calibrate).
inline CLI::Option* add_gpu_option(
    CLI::App* command, std::string& gpu,
    const std::string& help = "GPU name or device file (default h100-sxm)") {
  return command->add_option("--gpu", gpu, help);
}

// Throws keel::io_error unless `path` names a readable regular file within the input limit
// (keel::check_input_file: no device, FIFO, directory or /proc file that refuses reads).
void require_readable_file(const std::string& path);

// ---- numeric options: the one way to bind them -------------------------------------------
//
// Every option (or positional) with a numeric target is bound with add_number(), which puts
// number_check() first among its validators. number_check accepts, for an integer type, an
// optional sign and decimal digits; for a floating type, a finite number (strtod syntax
// without nan, inf or hex); in both cases only within [lo, hi] (or (lo, hi] with
// lo_open). It then rewrites the text to plain decimal, so CLI11's own conversion — strtoull
// with base 0, which turns "-1", "2^64" and 23-digit numbers into 2^64-1 and "010" into 8 —
// only ever sees a value in range. Everything else is a one-line usage error (exit 2) that
// CLI11 prefixes with the option's name:
//   "--seed: -1 is negative, expected an integer in [0, 18446744073709551615]"
//   "--tpot-ms: nan is not a finite number, expected a number >= 0"
// The range shows in --help after the type: "--threads INT:[1, 256]", "--tpot-ms FLOAT:>= 0".
// The validator is named k_number_check; tests/cli checks that every numeric option has it.

inline constexpr const char* k_number_check = "keel-number";

namespace detail {
__extension__ using number_i128 = __int128;
std::string check_integer(std::string& text, number_i128 lo, number_i128 hi);
std::string check_real(std::string& text, double lo, double hi, bool lo_open);
std::string describe_integer(number_i128 lo, number_i128 hi);
std::string describe_real(double lo, double hi, bool lo_open);

template <class T>
struct number_of {
  using type = T;
};
template <class T>
struct number_of<std::optional<T>> {
  using type = T;
};
template <class T>
struct number_of<std::vector<T>> {
  using type = T;
};
}  // namespace detail

template <class T>
CLI::Validator number_check(T lo, T hi, bool lo_open = false) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
  if constexpr (std::is_integral_v<T>) {
    const auto l = static_cast<detail::number_i128>(lo);
    const auto h = static_cast<detail::number_i128>(hi);
    return CLI::Validator([l, h](std::string& text) { return detail::check_integer(text, l, h); },
                          detail::describe_integer(l, h), k_number_check);
  } else {
    const auto l = static_cast<double>(lo);
    const auto h = static_cast<double>(hi);
    return CLI::Validator(
        [l, h, lo_open](std::string& text) { return detail::check_real(text, l, h, lo_open); },
        detail::describe_real(l, h, lo_open), k_number_check);
  }
}

// Binds a numeric option: `target` is T, std::optional<T> or std::vector<T> (one check per
// element); lo and hi default to T's whole (finite) range.
template <class Target, class T = typename detail::number_of<Target>::type>
CLI::Option* add_number(CLI::App* command, const std::string& name, Target& target,
                        const std::string& help,
                        std::type_identity_t<T> lo = std::numeric_limits<T>::lowest(),
                        std::type_identity_t<T> hi = std::numeric_limits<T>::max(),
                        bool lo_open = false) {
  return command->add_option(name, target, help)->transform(number_check<T>(lo, hi, lo_open));
}

// The whole command line: every group on `app` (main() and the tests use it).
void add_all_commands(CLI::App& app);

// `keel mem bench` (tools/keel/mem_bench.cpp), added to the mem group by add_mem_commands.
void add_mem_bench_command(CLI::App& mem);
// `keel mem compare` (tools/keel/mem_compare.cpp), added to the mem group by add_mem_commands.
void add_mem_compare_command(CLI::App& mem);

// `keel serve bench` (tools/keel/serve_bench.cpp), added to the serve group.
void add_serve_bench_command(CLI::App& serve);

// The subcommand groups, one source file each.
void add_mem_commands(CLI::App& root);
void add_rand_commands(CLI::App& root);
void add_kv_commands(CLI::App& root);
void add_perf_commands(CLI::App& root);
void add_gpus_commands(CLI::App& root);
void add_comm_commands(CLI::App& root);
void add_serve_commands(CLI::App& root);

}  // namespace keel::cli
