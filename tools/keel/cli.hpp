// Shared plumbing of the `keel` command line: one function per subcommand group adds its
// commands to the root app; run() parses, executes and maps every failure to one line on
// stderr and an exit code (0 ok, 1 internal failure, 2 bad input or usage). Commands report
// bad input by throwing keel::invalid_argument, keel::parse_error or keel::io_error.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

namespace keel::cli {

inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_internal = 1;
inline constexpr int k_exit_usage = 2;

// Parses argv and runs the selected command; never throws, never aborts.
int run(CLI::App& app, int argc, char** argv);

// The whole `keel` command line (every group) on argv; returns the exit code.
int run_keel(int argc, char** argv);

// Prints one JSON document (pretty, 2 spaces) and a newline on stdout.
void print_json(const nlohmann::json& document);

// Adds the conventional `--json` flag to a command.
inline CLI::Option* add_json_flag(CLI::App* command, bool& json) {
  return command->add_flag("--json", json, "Print one JSON document on stdout");
}

// Throws keel::io_error unless `path` names a readable regular file.
void require_readable_file(const std::string& path);

// `keel mem bench` (tools/keel/mem_bench.cpp), added to the mem group by add_mem_commands.
void add_mem_bench_command(CLI::App& mem);
// `keel mem compare` (tools/keel/mem_compare.cpp), added to the mem group by add_mem_commands.
void add_mem_compare_command(CLI::App& mem);

// The subcommand groups, one source file each.
void add_mem_commands(CLI::App& root);
void add_rand_commands(CLI::App& root);
void add_kv_commands(CLI::App& root);
void add_perf_commands(CLI::App& root);
void add_gpus_commands(CLI::App& root);
void add_comm_commands(CLI::App& root);

}  // namespace keel::cli
