// `keel mem`: replay PyTorch memory snapshots, explain OOMs, advise allocator settings.
#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "cli.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/core/output_file.hpp"
#include "keel/memory/analysis.hpp"
#include "keel/memory/replay.hpp"
#include "keel/memory/snapshot.hpp"
#include "keel/memory/synth.hpp"
#include "keel/memory/trace_model.hpp"
#include "mem_report.hpp"

namespace keel::cli {
namespace {

using namespace keel::memory;

struct replay_args {
  std::string trace;
  std::optional<int> device;
  std::string policy = "pytorch";
  std::optional<std::string> conf;
  std::optional<std::string> capacity;
  std::string start = "window";
  std::string sites_by = "site";
  bool continue_after_oom = false;
  std::optional<std::string> html;
  bool json = false;
};

void run_replay(const replay_args& a) {
  require_readable_file(a.trace);
  const snapshot snap = read_snapshot(a.trace);
  replay_request request;
  request.device = a.device;
  request.policy = a.policy;
  request.conf = a.conf;
  request.capacity = capacity_option(a.capacity);
  request.start = parse_start_mode(a.start);
  request.continue_after_oom = a.continue_after_oom;
  request.sites.group_by = parse_callsite_grouping(a.sites_by);
  const std::vector<device_replay> replays = replay_devices(snap, request);
  if (a.html) write_report(*a.html, snap, a.trace, a.device, request.capacity);
  if (a.json) {
    print_json(to_json(replays, a.trace, request.sites));
  } else {
    std::cout << to_text(replays, a.trace, request.sites);
  }
}

struct synth_args {
  std::string kind;
  std::string out;
  synth_options options;
  bool json = false;
};

void run_synth(synth_args a) {
  if (a.kind == "train") {
    a.options.kind = synth_kind::train;
  } else if (a.kind == "infer") {
    a.options.kind = synth_kind::infer;
  } else {
    throw invalid_argument(fmt::format("unknown workload '{}': expected train or infer", a.kind));
  }
  const snapshot s = synthesize(a.options);
  const bool as_json = a.out.size() >= 5 && a.out.substr(a.out.size() - 5) == ".json";
  write_output_file(a.out, [&](std::ostream& file) {
    if (as_json) {
      write_snapshot_json(s, file);
    } else {
      write_snapshot_pickle(s, file);
    }
  });
  std::uint64_t reserved = 0;
  for (const snapshot_segment& seg : s.segments) reserved += seg.total_size;
  const std::size_t entries = s.device_traces.empty() ? 0 : s.device_traces[0].size();
  if (a.json) {
    print_json({{"out", a.out},
                {"kind", a.kind},
                {"segments", s.segments.size()},
                {"entries", entries},
                {"reserved", reserved}});
  } else {
    std::cout << fmt::format(
        "wrote {}: a {} workload, {} trace entries, {} segments ({} reserved at the end)\n", a.out,
        a.kind, entries, s.segments.size(), format_size(reserved));
  }
}

}  // namespace

void add_mem_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand(
      "mem", "GPU memory: replay PyTorch snapshots, explain OOMs, advise allocator settings");
  group->require_subcommand(1);

  auto replay_cmd = std::make_shared<replay_args>();
  CLI::App* rp = group->add_subcommand(
      "replay", "Replay a PyTorch memory snapshot through keel's allocator and measure it");
  rp->add_option("trace", replay_cmd->trace, "Snapshot file (pickle from _dump_snapshot, or JSON)")
      ->required();
  add_number(rp, "--device", replay_cmd->device,
             "Device to replay (default: every device with data)", 0, k_max_device);
  rp->add_option("--policy", replay_cmd->policy, "pytorch or keel")->capture_default_str();
  rp->add_option("--conf", replay_cmd->conf,
                 "Allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax (default: as recorded)");
  rp->add_option("--capacity", replay_cmd->capacity,
                 "Memory this process can use, e.g. 80GiB (default: what a recorded OOM implies, "
                 "else unlimited)");
  rp->add_option(
        "--start", replay_cmd->start,
        "window (the recorded layout: what would have happened next) or fresh (the live blocks "
        "only: a restarted process)")
      ->capture_default_str();
  rp->add_option("--sites-by", replay_cmd->sites_by,
                 "Group the memory at the peak by call site or by module")
      ->capture_default_str();
  rp->add_flag("--continue-after-oom", replay_cmd->continue_after_oom,
               "Go on after an OOM the recording does not have (default: stop there)");
  rp->add_option("--html", replay_cmd->html, "Also write a self-contained HTML report");
  add_json_flag(rp, replay_cmd->json);
  rp->callback([replay_cmd] { run_replay(*replay_cmd); });

  auto synth_cmd = std::make_shared<synth_args>();
  CLI::App* sy = group->add_subcommand(
      "synth", "Write a realistic snapshot from a model of a workload (train or infer)");
  sy->add_option("kind", synth_cmd->kind,
                 "train (variable-length transformer training) or infer "
                 "(LLM serving with a growing KV cache)")
      ->required();
  sy->add_option("--out", synth_cmd->out, "Output file: .pickle (PyTorch's format) or .json")
      ->required();
  synth_options& so = synth_cmd->options;
  add_number(sy, "--seed", so.seed, "Random seed")->capture_default_str();
  add_number(sy, "--steps", so.steps, "Training steps or requests", 1, 100000)
      ->capture_default_str();
  add_number(sy, "--layers", so.layers, "Transformer layers", 1, 1000)->capture_default_str();
  add_number(sy, "--hidden", so.hidden, "Hidden size", 1, 1 << 20)->capture_default_str();
  add_number(sy, "--heads", so.heads, "Attention heads", 1, 1 << 16)->capture_default_str();
  add_number(sy, "--batch", so.batch, "Batch size", 1, 1 << 16)->capture_default_str();
  add_number(sy, "--min-seq", so.min_seq, "Shortest sequence or prompt", 1, 1 << 24)
      ->capture_default_str();
  add_number(sy, "--max-seq", so.max_seq, "Longest sequence or prompt", 1, 1 << 24)
      ->capture_default_str();
  add_number(sy, "--new-tokens", so.new_tokens, "Tokens generated per request (infer)", 1, 1 << 24)
      ->capture_default_str();
  add_json_flag(sy, synth_cmd->json);
  sy->callback([synth_cmd] { run_synth(*synth_cmd); });

  add_mem_advise_commands(*group);
  add_mem_bench_command(*group);
  add_mem_compare_command(*group);
}

}  // namespace keel::cli
