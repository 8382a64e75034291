// `keel kv`: KV-cache block manager: replay request traces, compare eviction policies
#include <fmt/format.h>

#include <iostream>
#include <limits>
#include <map>

#include "cli.hpp"
#include "keel/kv/report.hpp"

namespace keel::cli {
namespace {

void add_common(CLI::App* cmd, std::string& trace_path, kv::trace_replay_options& o,
                bool& no_hit_cap, bool& json) {
  cmd->add_option("trace", trace_path,
                  "JSONL trace: Mooncake format (timestamp, input_length, output_length, "
                  "hash_ids) or raw \"tokens\"")
      ->required();
  add_number(cmd, "--block-size", o.block_size, "Tokens per block (Mooncake traces: 512)", 1,
             kv::k_max_block_size)
      ->capture_default_str();
  cmd->add_option("--index", o.index, "Prefix index: hash (vLLM) or radix (SGLang)")
      ->capture_default_str()
      ->check(CLI::IsMember({"hash", "radix"}));
  cmd->add_flag("--hold", o.hold,
                "Keep each request's blocks referenced for its modelled prefill+decode time");
  add_number(cmd, "--prefill-tps", o.model.prefill_tokens_per_s,
             "--hold: uncached prompt tokens prefilled per second", 0.0,
             std::numeric_limits<double>::max(), true)
      ->capture_default_str();
  add_number(cmd, "--tpot-ms", o.model.decode_ms_per_token, "--hold: milliseconds per output token",
             0.0)
      ->capture_default_str();
  cmd->add_flag("--no-hit-cap", no_hit_cap,
                "Count a hit on the whole prompt (default: cap at num_tokens - 1, as vLLM)");
  add_json_flag(cmd, json);
}

std::string capacity_text(std::optional<std::size_t> blocks, std::size_t block_size) {
  if (!blocks) return "inf";
  return fmt::format("{} blocks ({} tokens)", *blocks, *blocks * block_size);
}

struct replay_args {
  std::string trace_path;
  kv::replay_request request;
  bool no_hit_cap = false;
  bool json = false;
};

void add_replay(CLI::App& group) {
  auto args = std::make_shared<replay_args>();
  CLI::App* cmd = group.add_subcommand(
      "replay", "Replay a trace in timestamp order and report prefix-cache hit rates");
  add_common(cmd, args->trace_path, args->request.options, args->no_hit_cap, args->json);
  cmd->add_option("--capacity", args->request.capacity,
                  "Cache size: N[k|M|G][tokens|blocks] or inf (tokens round down to blocks)")
      ->capture_default_str();
  cmd->add_option("--policy", args->request.policy,
                  "Eviction policy: lru, fifo, lfu, s3fifo, keel, belady")
      ->capture_default_str();
  cmd->callback([args] {
    args->request.options.cap_hit_at_last_token = !args->no_hit_cap;
    const kv::replay_report rep = kv::run_replay(args->trace_path, args->request);
    if (args->json) {
      std::cout << kv::to_json(rep).dump(2) << '\n';
      return;
    }
    const kv::replay_result& r = rep.result;
    fmt::print("trace      {} ({} requests, {} tokens per block)\n", rep.source, r.requests,
               rep.block_size);
    fmt::print("cache      {}, policy {}, index {}, {} mode\n",
               capacity_text(r.capacity_blocks, rep.block_size), r.policy, r.index,
               rep.hold ? "hold" : "instant");
    fmt::print("hit rate   {:.2f}% of prompt tokens, {:.2f}% of blocks\n", 100 * r.hit_rate_tokens,
               100 * r.hit_rate_blocks);
    fmt::print("ceiling    {:.2f}% with an infinite cache\n", 100 * r.infinite_hit_rate_tokens);
    fmt::print("evictions  {}\n", r.evictions);
    if (rep.hold) {
      fmt::print("held       peak {} blocks, {} requests rejected for lack of free blocks\n",
                 r.peak_held_blocks, r.rejected);
    }
    fmt::print("time       {:.1f} ms replay, {:.1f} ms loading the trace\n", r.elapsed_ms,
               rep.load_ms);
  });
}

struct sweep_args {
  std::string trace_path;
  kv::sweep_request request;
  std::string svg = "kv-sweep.svg";
  bool no_svg = false;
  bool no_hit_cap = false;
  bool json = false;
};

void add_sweep(CLI::App& group) {
  auto args = std::make_shared<sweep_args>();
  CLI::App* cmd = group.add_subcommand(
      "sweep", "Hit rate vs. cache capacity for every policy: a table and an SVG chart");
  add_common(cmd, args->trace_path, args->request.options, args->no_hit_cap, args->json);
  cmd->add_option("--capacities", args->request.capacities,
                  "Capacities, each N[k|M|G][tokens|blocks]")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--policies", args->request.policies, "Policies to compare")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--svg", args->svg, "Where to write the chart")->capture_default_str();
  cmd->add_flag("--no-svg", args->no_svg, "Do not write the chart");
  cmd->callback([args] {
    kv::sweep_request& request = args->request;
    request.options.cap_hit_at_last_token = !args->no_hit_cap;
    if (!args->no_svg) request.svg = args->svg;
    const kv::sweep_report rep = kv::run_sweep(args->trace_path, request);
    if (args->json) {
      std::cout << kv::to_json(rep).dump(2) << '\n';
      return;
    }
    std::map<std::pair<std::size_t, std::string>, double> at;
    for (const kv::sweep_point& p : rep.points)
      at[{p.capacity_blocks, p.policy}] = p.hit_rate_tokens;
    fmt::print("{} ({} requests, {}-token blocks, {} mode): token hit rate, infinite {:.2f}%\n",
               rep.source, rep.requests, rep.block_size, rep.hold ? "hold" : "instant",
               100 * rep.infinite_hit_rate_tokens);
    fmt::print("{:>14} {:>8}", "tokens", "blocks");
    for (const std::string& p : rep.policies) fmt::print(" {:>8}", p);
    fmt::print("\n");
    for (const std::size_t c : rep.capacities_blocks) {
      fmt::print("{:>14} {:>8}", c * rep.block_size, c);
      for (const std::string& p : rep.policies) fmt::print(" {:>7.2f}%", 100 * at[{c, p}]);
      fmt::print("\n");
    }
    if (rep.svg) fmt::print("chart: {}\n", *rep.svg);
    fmt::print("{} replays in {:.0f} ms\n", rep.points.size(), rep.elapsed_ms);
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
