#include "keel/kv/report.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "keel/core/error.hpp"
#include "keel/core/output_file.hpp"
#include "keel/kv/eviction_policy.hpp"
#include "keel/kv/prefix_index.hpp"

namespace keel::kv {
namespace {

using ordered_json = nlohmann::ordered_json;

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The CLI's messages for its numeric options (tools/keel/cli.hpp, number_check).
void check_rate(const char* option, double v, bool lo_open) {
  const char* expected = lo_open ? "a number > 0" : "a number >= 0";
  if (!std::isfinite(v)) {
    throw keel::invalid_argument(
        fmt::format("{}: {} is not a finite number, expected {}", option, v, expected));
  }
  if (v < 0 || (lo_open && v == 0)) {
    throw keel::invalid_argument(
        fmt::format("{}: {} is out of range, expected {}", option, v, expected));
  }
}

replay_options replay_options_of(const trace_replay_options& a) {
  replay_options o;
  o.index = a.index;
  o.hold = a.hold;
  o.model = a.model;
  o.cap_hit_at_last_token = a.cap_hit_at_last_token;
  return o;
}

void check_block_size(const timed_trace& t, std::size_t block_size, const char* what) {
  if (t.value.block_size != block_size) {
    throw keel::invalid_argument(
        fmt::format("{}: the trace was cut into {}-token blocks, the request asks for {}", what,
                    t.value.block_size, block_size));
  }
}

const char* mode_of(bool hold) { return hold ? "hold" : "instant"; }

replay_options checked(const replay_request& r) {
  validate(r.options);
  replay_options o = replay_options_of(r.options);
  o.capacity_blocks = parse_capacity(r.capacity, r.options.block_size);
  o.policy = r.policy;
  make_policy(o.policy);  // validates the name before the trace is read
  return o;
}

std::vector<std::size_t> checked(const sweep_request& r) {
  validate(r.options);
  std::vector<std::size_t> caps;
  for (const std::string& c : r.capacities) {
    const auto blocks = parse_capacity(c, r.options.block_size);
    if (!blocks) throw keel::invalid_argument("sweep: capacities must be finite");
    caps.push_back(*blocks);
  }
  for (const std::string& p : r.policies) make_policy(p);
  return caps;
}

}  // namespace

void validate(const trace_replay_options& o) {
  if (o.block_size < 1 || o.block_size > k_max_block_size) {
    throw keel::invalid_argument(
        fmt::format("--block-size: {} is out of range, expected an integer in [1, {}]",
                    o.block_size, k_max_block_size));
  }
  if (o.index != "hash" && o.index != "radix") {
    throw keel::invalid_argument(
        fmt::format("unknown prefix index '{}' (known: hash, radix)", o.index));
  }
  check_rate("--prefill-tps", o.model.prefill_tokens_per_s, true);
  check_rate("--tpot-ms", o.model.decode_ms_per_token, false);
}

timed_trace load_timed_trace(const std::string& path, std::size_t block_size) {
  const auto start = std::chrono::steady_clock::now();
  timed_trace t{load_trace(path, block_size), 0};
  t.load_ms = ms_since(start);
  if (t.value.requests.empty()) throw keel::invalid_argument(path + ": no requests");
  return t;
}

replay_report run_replay(const timed_trace& t, const replay_request& request) {
  const replay_options o = checked(request);
  check_block_size(t, request.options.block_size, "replay");
  replay_report report;
  report.source = t.value.source;
  report.block_size = t.value.block_size;
  report.hold = request.options.hold;
  report.cap_hit_at_last_token = request.options.cap_hit_at_last_token;
  report.result = replay(t.value, o);
  report.load_ms = t.load_ms;
  return report;
}

replay_report run_replay(const std::string& path, const replay_request& request) {
  checked(request);
  return run_replay(load_timed_trace(path, request.options.block_size), request);
}

ordered_json to_json(const replay_report& report) {
  const replay_result& r = report.result;
  ordered_json j;
  j["policy"] = r.policy;
  j["capacity_blocks"] =
      r.capacity_blocks ? ordered_json(*r.capacity_blocks) : ordered_json(nullptr);
  j["requests"] = r.requests;
  j["hit_rate_tokens"] = r.hit_rate_tokens;
  j["hit_rate_blocks"] = r.hit_rate_blocks;
  j["infinite_hit_rate_tokens"] = r.infinite_hit_rate_tokens;
  j["evictions"] = r.evictions;
  j["elapsed_ms"] = r.elapsed_ms;
  j["load_ms"] = report.load_ms;
  j["block_size"] = report.block_size;
  j["index"] = r.index;
  j["mode"] = mode_of(report.hold);
  j["hit_cap"] = report.cap_hit_at_last_token ? "num_tokens-1" : "none";
  if (report.hold) {
    j["rejected"] = r.rejected;
    j["peak_held_blocks"] = r.peak_held_blocks;
  }
  return j;
}

std::vector<std::string> default_sweep_capacities() {
  return {"500k", "1M", "2M", "3M", "5M", "7.5M", "10.24M", "15M", "20M"};
}

sweep_report run_sweep(const timed_trace& t, const sweep_request& request) {
  sweep_report report;
  report.capacities_blocks = checked(request);
  check_block_size(t, request.options.block_size, "sweep");
  report.source = t.value.source;
  report.block_size = t.value.block_size;
  report.requests = t.value.requests.size();
  report.hold = request.options.hold;
  report.policies = request.policies;
  report.load_ms = t.load_ms;
  const auto start = std::chrono::steady_clock::now();
  const replay_options o = replay_options_of(request.options);
  report.infinite_hit_rate_tokens = infinite_hit_rate(t.value, o.cap_hit_at_last_token);
  report.points = sweep(t.value, report.capacities_blocks, report.policies, o);
  report.elapsed_ms = ms_since(start);
  if (request.svg) {
    write_output_file(*request.svg, sweep_chart(report));
    report.svg = request.svg;
  }
  return report;
}

sweep_report run_sweep(const std::string& path, const sweep_request& request) {
  checked(request);
  return run_sweep(load_timed_trace(path, request.options.block_size), request);
}

std::string sweep_chart(const sweep_report& report) {
  return sweep_svg(report.points, report.infinite_hit_rate_tokens, report.block_size,
                   fmt::format("{}: prefix hit rate vs. capacity ({}-token blocks, {})",
                               report.source.substr(report.source.find_last_of('/') + 1),
                               report.block_size, mode_of(report.hold)));
}

ordered_json to_json(const sweep_report& report) {
  ordered_json j;
  j["trace"] = report.source;
  j["block_size"] = report.block_size;
  j["requests"] = report.requests;
  j["mode"] = mode_of(report.hold);
  j["infinite_hit_rate_tokens"] = report.infinite_hit_rate_tokens;
  j["points"] = ordered_json::array();
  for (const sweep_point& p : report.points) {
    j["points"].push_back({{"policy", p.policy},
                           {"capacity_blocks", p.capacity_blocks},
                           {"capacity_tokens", p.capacity_blocks * report.block_size},
                           {"hit_rate_tokens", p.hit_rate_tokens},
                           {"hit_rate_blocks", p.hit_rate_blocks}});
  }
  j["svg"] = report.svg ? ordered_json(*report.svg) : ordered_json(nullptr);
  j["elapsed_ms"] = report.elapsed_ms;
  return j;
}

}  // namespace keel::kv
