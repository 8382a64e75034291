// `keel kv`: KV-cache block manager: replay request traces, compare eviction policies. The logic
// and the text live in keel::kv (report.hpp); this file parses and prints.
#include <limits>
#include <memory>

#include "cli.hpp"
#include "keel/kv/report.hpp"

namespace keel::cli {
namespace {

// What replay and sweep share: the trace, how it is replayed, and the output.
struct trace_args {
  std::string trace_path;
  bool no_hit_cap = false;
  bool json = false;
};

void add_common(CLI::App* cmd, trace_args& args, kv::trace_replay_options& o) {
  cmd->add_option("trace", args.trace_path,
                  "JSONL trace: Mooncake format (timestamp, input_length, "
                  "output_length, "
                  "hash_ids) or raw \"tokens\"")
      ->required();
  add_number(cmd, "--block-size", o.block_size, "Tokens per block (Mooncake traces: 512)", 1,
             kv::k_max_block_size)
      ->capture_default_str();
  cmd->add_option("--index", o.index, "Prefix index: hash (vLLM) or radix (SGLang)")
      ->capture_default_str()
      ->check(CLI::IsMember({"hash", "radix"}));
  cmd->add_flag("--hold", o.hold,
                "Keep each request's blocks referenced for its modelled "
                "prefill+decode time");
  add_number(cmd, "--prefill-tps", o.model.prefill_tokens_per_s,
             "--hold: uncached prompt tokens prefilled per second", 0.0,
             std::numeric_limits<double>::max(), true)
      ->capture_default_str();
  add_number(cmd, "--tpot-ms", o.model.decode_ms_per_token, "--hold: milliseconds per output token",
             0.0)
      ->capture_default_str();
  cmd->add_flag("--no-hit-cap", args.no_hit_cap,
                "Count a hit on the whole prompt (default: cap at num_tokens - "
                "1, as vLLM)");
  add_json_flag(cmd, args.json);
}

void add_replay(CLI::App& group) {
  struct replay_args : trace_args {
    kv::replay_request request;
  };
  auto args = std::make_shared<replay_args>();
  CLI::App* cmd = group.add_subcommand(
      "replay", "Replay a trace in timestamp order and report prefix-cache hit rates");
  add_common(cmd, *args, args->request.options);
  cmd->add_option("--capacity", args->request.capacity,
                  "Cache size: N[k|M|G][tokens|blocks] or inf (tokens round "
                  "down to blocks)")
      ->capture_default_str();
  cmd->add_option("--policy", args->request.policy,
                  "Eviction policy: lru, fifo, lfu, s3fifo, keel, belady")
      ->capture_default_str();
  cmd->callback([args] {
    args->request.options.cap_hit_at_last_token = !args->no_hit_cap;
    print_result(args->json, kv::run_replay(args->trace_path, args->request));
  });
}

void add_sweep(CLI::App& group) {
  struct sweep_args : trace_args {
    kv::sweep_request request;
    std::string svg = "kv-sweep.svg";
    bool no_svg = false;
  };
  auto args = std::make_shared<sweep_args>();
  CLI::App* cmd = group.add_subcommand(
      "sweep", "Hit rate vs. cache capacity for every policy: a table and an SVG chart");
  add_common(cmd, *args, args->request.options);
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
    args->request.options.cap_hit_at_last_token = !args->no_hit_cap;
    if (!args->no_svg) args->request.svg = args->svg;
    print_result(args->json, kv::run_sweep(args->trace_path, args->request));
  });
}

}  // namespace

void add_kv_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand("kv",
                                        "KV-cache block manager: replay request "
                                        "traces, compare eviction policies");
  group->require_subcommand(1);
  add_replay(*group);
  add_sweep(*group);
}

}  // namespace keel::cli
