// `keel kv`: KV-cache block manager: replay request traces, compare eviction policies
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <limits>
#include <map>

#include "cli.hpp"
#include "keel/core/error.hpp"
#include "keel/core/output_file.hpp"
#include "keel/kv/eviction_policy.hpp"
#include "keel/kv/replay.hpp"

namespace keel::cli {
namespace {

struct common_args {
  std::string trace_path;
  std::size_t block_size = 512;
  std::string index = "hash";
  bool hold = false;
  double prefill_tps = 10000.0;
  double tpot_ms = 30.0;
  bool no_hit_cap = false;
  bool json = false;
};

void add_common(CLI::App* cmd, common_args& a) {
  cmd->add_option("trace", a.trace_path,
                  "JSONL trace: Mooncake format (timestamp, input_length, output_length, "
                  "hash_ids) or raw \"tokens\"")
      ->required();
  add_number(cmd, "--block-size", a.block_size, "Tokens per block (Mooncake traces: 512)", 1,
             std::size_t{1} << 20)
      ->capture_default_str();
  cmd->add_option("--index", a.index, "Prefix index: hash (vLLM) or radix (SGLang)")
      ->capture_default_str()
      ->check(CLI::IsMember({"hash", "radix"}));
  cmd->add_flag("--hold", a.hold,
                "Keep each request's blocks referenced for its modelled prefill+decode time");
  add_number(cmd, "--prefill-tps", a.prefill_tps,
             "--hold: uncached prompt tokens prefilled per second", 0.0,
             std::numeric_limits<double>::max(), true)
      ->capture_default_str();
  add_number(cmd, "--tpot-ms", a.tpot_ms, "--hold: milliseconds per output token", 0.0)
      ->capture_default_str();
  cmd->add_flag("--no-hit-cap", a.no_hit_cap,
                "Count a hit on the whole prompt (default: cap at num_tokens - 1, as vLLM)");
  add_json_flag(cmd, a.json);
}

kv::trace load(const common_args& a, double& load_ms) {
  const auto start = std::chrono::steady_clock::now();
  kv::trace t = kv::load_trace(a.trace_path, a.block_size);
  load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (t.requests.empty()) throw keel::invalid_argument(a.trace_path + ": no requests");
  return t;
}

kv::replay_options options_of(const common_args& a) {
  kv::replay_options o;
  o.index = a.index;
  o.hold = a.hold;
  o.model.prefill_tokens_per_s = a.prefill_tps;
  o.model.decode_ms_per_token = a.tpot_ms;
  o.cap_hit_at_last_token = !a.no_hit_cap;
  return o;
}

std::string capacity_text(std::optional<std::size_t> blocks, std::size_t block_size) {
  if (!blocks) return "inf";
  return fmt::format("{} blocks ({} tokens)", *blocks, *blocks * block_size);
}

void add_replay(CLI::App& group) {
  auto args = std::make_shared<common_args>();
  auto capacity = std::make_shared<std::string>("inf");
  auto policy = std::make_shared<std::string>("lru");
  CLI::App* cmd = group.add_subcommand(
      "replay", "Replay a trace in timestamp order and report prefix-cache hit rates");
  add_common(cmd, *args);
  cmd->add_option("--capacity", *capacity,
                  "Cache size: N[k|M|G][tokens|blocks] or inf (tokens round down to blocks)")
      ->capture_default_str();
  cmd->add_option("--policy", *policy, "Eviction policy: lru, fifo, lfu, s3fifo, keel, belady")
      ->capture_default_str();
  cmd->callback([args, capacity, policy] {
    const common_args& a = *args;
    kv::replay_options o = options_of(a);
    o.capacity_blocks = kv::parse_capacity(*capacity, a.block_size);
    o.policy = *policy;
    kv::make_policy(o.policy);  // validates the name before the trace is read
    double load_ms = 0;
    const kv::trace t = load(a, load_ms);
    const kv::replay_result r = kv::replay(t, o);
    if (a.json) {
      nlohmann::ordered_json j;
      j["policy"] = r.policy;
      j["capacity_blocks"] = r.capacity_blocks ? nlohmann::ordered_json(*r.capacity_blocks)
                                               : nlohmann::ordered_json(nullptr);
      j["requests"] = r.requests;
      j["hit_rate_tokens"] = r.hit_rate_tokens;
      j["hit_rate_blocks"] = r.hit_rate_blocks;
      j["infinite_hit_rate_tokens"] = r.infinite_hit_rate_tokens;
      j["evictions"] = r.evictions;
      j["elapsed_ms"] = r.elapsed_ms;
      j["load_ms"] = load_ms;
      j["block_size"] = t.block_size;
      j["index"] = r.index;
      j["mode"] = a.hold ? "hold" : "instant";
      j["hit_cap"] = a.no_hit_cap ? "none" : "num_tokens-1";
      if (a.hold) {
        j["rejected"] = r.rejected;
        j["peak_held_blocks"] = r.peak_held_blocks;
      }
      std::cout << j.dump(2) << '\n';
      return;
    }
    fmt::print("trace      {} ({} requests, {} tokens per block)\n", t.source, r.requests,
               t.block_size);
    fmt::print("cache      {}, policy {}, index {}, {} mode\n",
               capacity_text(r.capacity_blocks, t.block_size), r.policy, r.index,
               a.hold ? "hold" : "instant");
    fmt::print("hit rate   {:.2f}% of prompt tokens, {:.2f}% of blocks\n", 100 * r.hit_rate_tokens,
               100 * r.hit_rate_blocks);
    fmt::print("ceiling    {:.2f}% with an infinite cache\n", 100 * r.infinite_hit_rate_tokens);
    fmt::print("evictions  {}\n", r.evictions);
    if (a.hold) {
      fmt::print("held       peak {} blocks, {} requests rejected for lack of free blocks\n",
                 r.peak_held_blocks, r.rejected);
    }
    fmt::print("time       {:.1f} ms replay, {:.1f} ms loading the trace\n", r.elapsed_ms, load_ms);
  });
}

void add_sweep(CLI::App& group) {
  auto args = std::make_shared<common_args>();
  auto capacities = std::make_shared<std::vector<std::string>>(
      std::vector<std::string>{"500k", "1M", "2M", "3M", "5M", "7.5M", "10.24M", "15M", "20M"});
  auto policies = std::make_shared<std::vector<std::string>>(kv::policy_names());
  auto svg = std::make_shared<std::string>("kv-sweep.svg");
  auto no_svg = std::make_shared<bool>(false);
  CLI::App* cmd = group.add_subcommand(
      "sweep", "Hit rate vs. cache capacity for every policy: a table and an SVG chart");
  add_common(cmd, *args);
  cmd->add_option("--capacities", *capacities, "Capacities, each N[k|M|G][tokens|blocks]")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--policies", *policies, "Policies to compare")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--svg", *svg, "Where to write the chart")->capture_default_str();
  cmd->add_flag("--no-svg", *no_svg, "Do not write the chart");
  cmd->callback([args, capacities, policies, svg, no_svg] {
    const common_args& a = *args;
    std::vector<std::size_t> caps;
    for (const std::string& c : *capacities) {
      const auto blocks = kv::parse_capacity(c, a.block_size);
      if (!blocks) throw keel::invalid_argument("sweep: capacities must be finite");
      caps.push_back(*blocks);
    }
    for (const std::string& p : *policies) kv::make_policy(p);
    double load_ms = 0;
    const kv::trace t = load(a, load_ms);
    const auto start = std::chrono::steady_clock::now();
    const kv::replay_options o = options_of(a);
    const double infinite = kv::infinite_hit_rate(t, o.cap_hit_at_last_token);
    const std::vector<kv::sweep_point> points = kv::sweep(t, caps, *policies, o);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!*no_svg) {
      write_output_file(
          *svg, kv::sweep_svg(points, infinite, t.block_size,
                              fmt::format("{}: prefix hit rate vs. capacity ({}-token blocks, {})",
                                          t.source.substr(t.source.find_last_of('/') + 1),
                                          t.block_size, a.hold ? "hold" : "instant")));
    }
    if (a.json) {
      nlohmann::ordered_json j;
      j["trace"] = t.source;
      j["block_size"] = t.block_size;
      j["requests"] = t.requests.size();
      j["mode"] = a.hold ? "hold" : "instant";
      j["infinite_hit_rate_tokens"] = infinite;
      j["points"] = nlohmann::ordered_json::array();
      for (const kv::sweep_point& p : points) {
        j["points"].push_back({{"policy", p.policy},
                               {"capacity_blocks", p.capacity_blocks},
                               {"capacity_tokens", p.capacity_blocks * t.block_size},
                               {"hit_rate_tokens", p.hit_rate_tokens},
                               {"hit_rate_blocks", p.hit_rate_blocks}});
      }
      j["svg"] = *no_svg ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(*svg);
      j["elapsed_ms"] = ms;
      std::cout << j.dump(2) << '\n';
      return;
    }
    std::map<std::pair<std::size_t, std::string>, double> at;
    for (const kv::sweep_point& p : points) at[{p.capacity_blocks, p.policy}] = p.hit_rate_tokens;
    fmt::print("{} ({} requests, {}-token blocks, {} mode): token hit rate, infinite {:.2f}%\n",
               t.source, t.requests.size(), t.block_size, a.hold ? "hold" : "instant",
               100 * infinite);
    fmt::print("{:>14} {:>8}", "tokens", "blocks");
    for (const std::string& p : *policies) fmt::print(" {:>8}", p);
    fmt::print("\n");
    for (const std::size_t c : caps) {
      fmt::print("{:>14} {:>8}", c * t.block_size, c);
      for (const std::string& p : *policies) fmt::print(" {:>7.2f}%", 100 * at[{c, p}]);
      fmt::print("\n");
    }
    if (!*no_svg) fmt::print("chart: {}\n", *svg);
    fmt::print("{} replays in {:.0f} ms\n", points.size(), ms);
  });
}

}  // namespace

void add_kv_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand(
      "kv", "KV-cache block manager: replay request traces, compare eviction policies");
  group->require_subcommand(1);
  add_replay(*group);
  add_sweep(*group);
}

}  // namespace keel::cli
