// The documents `keel comm verify|bench|faults --json` print, built from the reports of
// run_verify (selftest.hpp), run_bench (bench.hpp) and run_fault_trials (faults.hpp).
//
// Each to_json() returns one nlohmann::json object (keys sorted, as nlohmann::json keeps
// them). `keel comm bench` without --json prints nccl-tests' text table instead: the
// nccl_tests_*() lines, byte for byte the layout of nccl-tests' all_reduce_perf (each ends
// in a newline). Pure functions of their arguments (the header also names this host and
// process); thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "keel/comm/bench.hpp"
#include "keel/comm/faults.hpp"
#include "keel/comm/selftest.hpp"

namespace keel::comm {

// nccl-tests' table: the header (options, one line per rank with its transport, the column
// titles), one row per bench_row, and the footer (wrong values, average bus bandwidth).
std::string nccl_tests_header(const communicator& c, const bench_options& o);
std::string nccl_tests_row(const bench_row& row, const bench_options& o);
std::string nccl_tests_footer(const bench_result& r);

// {ranks, transport, cases, failed, seconds}
nlohmann::json to_json(const verify_report& r, int ranks, std::string_view transport);
// {size, count, type, redop, root, time_us, algbw, busbw, wrong, in_place: {...}}
nlohmann::json to_json(const bench_row& row, const bench_options& o);
// {collective, ranks, algo, rows, avg_busbw, wrong}
nlohmann::json to_json(const bench_result& r, const bench_options& o, int ranks);
// {trial, victim, leftover_segments, survivors: [{rank, exit, hang | error, ...}], ok}
nlohmann::json to_json(const fault_trial& t);
// {ranks, trials, timeout_s, ok_trials, hangs, trials_with_leftover_segments,
//  worst_seconds_after_kill, results}
nlohmann::json to_json(const fault_summary& s, const fault_options& o);

}  // namespace keel::comm
