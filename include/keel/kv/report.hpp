// Replay and sweep as commands: one request in, one report out, one JSON document.
//
// `keel kv replay|sweep` and keel.kv (Python) run the same functions: run_replay() and
// run_sweep() take the request as a plain struct (the options as the CLI takes them, with
// capacities in parse_capacity() syntax), validate it before the trace is read, and return a
// report; to_json() turns a report into the document `--json` prints, key for key and in the
// same order (nlohmann::ordered_json), and to_text() into the text the CLI prints otherwise.
// A timed_trace is an immutable value that any number of runs may share between threads; the
// functions keep no state and are thread-safe (run_sweep writes its chart file when asked).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "keel/kv/replay.hpp"
#include "keel/kv/trace.hpp"

namespace keel::kv {

// The largest block size a command takes (tokens per block).
inline constexpr std::size_t k_max_block_size = std::size_t{1} << 20;

// What replay and sweep share: how the trace is cut into blocks and how it is replayed.
struct trace_replay_options {
  std::size_t block_size = 512;       // --block-size, in [1, k_max_block_size]
  std::string index = "hash";         // --index: hash or radix
  bool hold = false;                  // --hold
  hold_model model;                   // --prefill-tps (> 0), --tpot-ms (>= 0), both finite
  bool cap_hit_at_last_token = true;  // false with --no-hit-cap
};

// Throws keel::invalid_argument, with the CLI's message for the option, when a field is out
// of its range or the index is unknown.
void validate(const trace_replay_options& options);

// A loaded trace and how long loading took.
struct timed_trace {
  trace value;
  double load_ms = 0;
};

// load_trace() with its time. Throws what load_trace throws, and keel::invalid_argument
// ("PATH: no requests") for a trace without requests.
timed_trace load_timed_trace(const std::string& path, std::size_t block_size);

// `keel kv replay`.
struct replay_request {
  trace_replay_options options;
  std::string capacity = "inf";  // parse_capacity() syntax: "inf", "3M", "5859blocks"
  std::string policy = "lru";    // a policy_names() entry
};

struct replay_report {
  std::string source;  // the trace's path
  std::size_t block_size = 0;
  bool hold = false;
  bool cap_hit_at_last_token = true;
  replay_result result;
  double load_ms = 0;
};

// Replays a loaded trace. Throws keel::invalid_argument for a bad request (see validate, and
// parse_capacity / make_policy) or a trace cut into blocks of another size than
// options.block_size.
replay_report run_replay(const timed_trace& t, const replay_request& request);
// Validates the request, then loads the trace at `path` (load_timed_trace) and replays it.
replay_report run_replay(const std::string& path, const replay_request& request);

// policy, capacity_blocks (null: infinite), requests, hit_rate_tokens, hit_rate_blocks,
// infinite_hit_rate_tokens, evictions, elapsed_ms, load_ms, block_size, index, mode
// ("instant"/"hold"), hit_cap ("num_tokens-1"/"none"), and in hold mode rejected and
// peak_held_blocks.
nlohmann::ordered_json to_json(const replay_report& report);
// "trace ... / cache ... / hit rate ... / ceiling ... / evictions ... / [held ...] / time ...",
// one line each.
std::string to_text(const replay_report& report);

// The capacities `keel kv sweep` compares by default: 500k to 20M tokens.
std::vector<std::string> default_sweep_capacities();

// `keel kv sweep`.
struct sweep_request {
  trace_replay_options options;
  std::vector<std::string> capacities = default_sweep_capacities();  // finite, parse_capacity
  std::vector<std::string> policies = policy_names();
  std::optional<std::string> svg;  // where to write the chart (keel::output_file); none: no chart
};

struct sweep_report {
  std::string source;
  std::size_t block_size = 0;
  std::size_t requests = 0;
  bool hold = false;
  std::vector<std::size_t> capacities_blocks;  // as requested, in order
  std::vector<std::string> policies;           // as requested, in order
  double infinite_hit_rate_tokens = 0;
  std::vector<sweep_point> points;  // every policy at every capacity, policy-major
  std::optional<std::string> svg;   // the chart written, if any
  double elapsed_ms = 0;            // the ceiling and every replay
  double load_ms = 0;
};

// Every policy at every capacity. Throws keel::invalid_argument for a bad request (an
// infinite capacity: "sweep: capacities must be finite") and keel::io_error when the chart
// cannot be written.
sweep_report run_sweep(const timed_trace& t, const sweep_request& request);
// Validates the request, then loads the trace at `path` and sweeps it.
sweep_report run_sweep(const std::string& path, const sweep_request& request);

// The report's chart (sweep_svg) with the CLI's title: "FILE: prefix hit rate vs. capacity
// (B-token blocks, MODE)".
std::string sweep_chart(const sweep_report& report);

// trace, block_size, requests, mode, infinite_hit_rate_tokens, points (policy,
// capacity_blocks, capacity_tokens, hit_rate_tokens, hit_rate_blocks), svg (null: none),
// elapsed_ms.
nlohmann::ordered_json to_json(const sweep_report& report);
// A heading, a table of token hit rates (one row per capacity, one column per policy, in
// request order), the chart's path when one was written, and the time.
std::string to_text(const sweep_report& report);

}  // namespace keel::kv
