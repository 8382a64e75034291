// `keel mem`: replay PyTorch memory snapshots, explain OOMs, advise allocator settings.
#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "cli.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/replay.hpp"
#include "keel/memory/snapshot.hpp"
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
  std::optional<std::string> start;
  std::optional<std::string> html;
  bool json = false;
};

std::optional<std::size_t> parse_capacity(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const std::uint64_t bytes = parse_size(*text);
  if (bytes == 0) throw invalid_argument("--capacity must be larger than 0");
  return bytes;
}

// The replay configuration: --conf (else the recorded settings for pytorch), plus --policy.
allocator_config config_for(const trace_model& model, const std::string& policy,
                            const std::optional<std::string>& conf) {
  allocator_config c = conf ? allocator_config::parse(*conf, "--conf") : model.recorded_config;
  if (policy == "keel") {
    c.policy = policy_kind::keel;
  } else if (policy == "pytorch") {
    if (!conf || c.policy != policy_kind::keel) c.policy = policy_kind::pytorch;
  } else {
    throw invalid_argument(fmt::format("--policy: unknown policy '{}': expected pytorch or keel", policy));
  }
  return c;
}

std::optional<start_mode> parse_start(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  if (*text == "layout") return start_mode::layout;
  if (*text == "live") return start_mode::live;
  throw invalid_argument(fmt::format("--start: unknown mode '{}': expected layout or live", *text));
}

void run_replay(const replay_args& a) {
  require_readable_file(a.trace);
  const snapshot snap = read_snapshot(a.trace);
  const int device = pick_device(snap, a.device, a.trace);
  const trace_model model = build_trace_model(snap, device);
  replay_options options;
  options.config = config_for(model, a.policy, a.conf);
  options.capacity = parse_capacity(a.capacity);
  options.start = parse_start(a.start);
  options.snapshot_at_peak = a.html.has_value();
  const replay_result r = replay(model, options);
  if (a.html) write_html_report(*a.html, a.trace, model, {r});
  if (a.json) {
    print_json(replay_to_json(r, model));
  } else {
    print_replay_text(std::cout, a.trace, model, r);
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
  rp->add_option("--device", replay_cmd->device, "Device to replay (default: the one with most events)");
  rp->add_option("--policy", replay_cmd->policy, "pytorch or keel")->capture_default_str();
  rp->add_option("--conf", replay_cmd->conf,
                 "Allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax (default: as recorded)");
  rp->add_option("--capacity", replay_cmd->capacity, "Device memory, e.g. 80GiB (default: unlimited)");
  rp->add_option("--start", replay_cmd->start,
                 "Starting state: layout (PyTorch's segments as recorded) or live (only the live "
                 "blocks); default layout for pytorch, live for keel");
  rp->add_option("--html", replay_cmd->html, "Also write a self-contained HTML report");
  add_json_flag(rp, replay_cmd->json);
  rp->callback([replay_cmd] { run_replay(*replay_cmd); });

  add_mem_advise_commands(*group);
}

}  // namespace keel::cli
