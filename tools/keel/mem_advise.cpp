// `keel mem advise` and `keel mem explain`.
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <mutex>

#include "cli.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/advisor.hpp"
#include "keel/memory/explain.hpp"
#include "keel/memory/snapshot.hpp"
#include "mem_report.hpp"

namespace keel::cli {
namespace {

using namespace keel::memory;

struct advise_args {
  std::string trace;
  std::optional<int> device;
  std::optional<std::string> capacity;
  std::optional<std::string> html;
  unsigned threads = 0;
  bool json = false;
};

struct explain_args {
  std::string trace;
  std::optional<int> device;
  std::optional<std::string> capacity;
  bool json = false;
};

std::optional<std::uint64_t> capacity_of(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const std::uint64_t bytes = parse_size(*text);
  if (bytes == 0) throw invalid_argument("--capacity must be larger than 0");
  return bytes;
}

std::string label(const ranked_result& r) {
  std::string conf = r.settings.config.to_string();
  if (conf.empty()) conf = "(PyTorch defaults)";
  if (r.settings.memory_fraction) conf += fmt::format(" +fraction {}", *r.settings.memory_fraction);
  return conf + (r.settings.baseline ? "  [recorded]" : "");
}

void run_advise(const advise_args& a) {
  require_readable_file(a.trace);
  const snapshot snap = read_snapshot(a.trace);
  const trace_model model = build_trace_model(snap, pick_device(snap, a.device, a.trace));
  advise_options options;
  options.capacity = capacity_of(a.capacity);
  options.threads = a.threads;
  const bool tty = isatty(STDERR_FILENO) != 0;
  options.progress = [tty](std::size_t done, std::size_t total) {
    if (!tty) return;
    const std::size_t width = 30;
    const std::size_t filled = done * width / total;
    std::cerr << fmt::format("\r[{}{}] {}/{} settings replayed", std::string(filled, '#'),
                             std::string(width - filled, ' '), done, total)
              << (done == total ? "\n" : "") << std::flush;
  };
  const advice adv = advise(model, default_candidates(model.recorded_config, options.capacity.has_value()), options);

  if (a.html) {
    std::vector<replay_result> shown;
    if (adv.baseline) shown.push_back(adv.ranked[*adv.baseline].result);
    for (std::optional<std::size_t> i : {adv.best_pytorch, adv.best}) {
      if (i && i != adv.baseline) shown.push_back(adv.ranked[*i].result);
    }
    // The segment map at the peak of the best setting.
    if (!shown.empty()) {
      const ranked_result& best = adv.ranked[adv.best.value_or(0)];
      replay_options o;
      o.config = best.settings.config;
      o.capacity = options.capacity;
      o.memory_fraction = best.settings.memory_fraction;
      o.snapshot_at_peak = true;
      shown.back() = replay(model, o);
    }
    write_html_report(*a.html, a.trace, model, shown);
  }

  if (a.json) {
    nlohmann::json j;
    j["device"] = model.device;
    j["events"] = model.entries;
    j["capacity"] = options.capacity ? nlohmann::json(*options.capacity) : nullptr;
    j["candidates"] = nlohmann::json::array();
    for (const ranked_result& r : adv.ranked) {
      j["candidates"].push_back({{"conf", r.settings.config.to_string()},
                                 {"policy", std::string(to_string(r.settings.config.policy))},
                                 {"memory_fraction", r.settings.memory_fraction ? nlohmann::json(*r.settings.memory_fraction) : nullptr},
                                 {"recorded", r.settings.baseline},
                                 {"peak_reserved", r.result.peak_reserved},
                                 {"peak_allocated", r.result.peak_allocated},
                                 {"fragmentation", r.result.fragmentation},
                                 {"device_mallocs", r.result.device_mallocs},
                                 {"oom", r.oom},
                                 {"env", environment_line(r.settings)}});
    }
    const auto pick = [&](std::optional<std::size_t> i) -> nlohmann::json {
      if (!i) return nullptr;
      const ranked_result& r = adv.ranked[*i];
      return {{"conf", r.settings.config.to_string()},
              {"policy", std::string(to_string(r.settings.config.policy))},
              {"peak_reserved", r.result.peak_reserved},
              {"fragmentation", r.result.fragmentation},
              {"oom", r.oom},
              {"env", environment_line(r.settings)}};
    };
    j["best"] = pick(adv.best);
    j["best_pytorch"] = pick(adv.best_pytorch);
    j["elapsed_ms"] = adv.elapsed_ms;
    print_json(j);
    return;
  }
  std::cout << fmt::format("{} (device {}): {} events, peak allocated {} (requested bytes)\n\n", a.trace,
                           model.device, model.entries,
                           format_size(adv.ranked.empty() ? 0 : adv.ranked.front().result.peak_allocated));
  std::cout << fmt::format("{:>4}  {:<62} {:>12} {:>8} {:>8}\n", "rank", "settings", "peak resv", "frag", "mallocs");
  for (std::size_t i = 0; i < adv.ranked.size(); ++i) {
    const ranked_result& r = adv.ranked[i];
    std::cout << fmt::format("{:>4}  {:<62} {:>12} {:>8.3f} {:>8}{}\n", i + 1, label(r),
                             format_size(r.result.peak_reserved), r.result.fragmentation,
                             r.result.device_mallocs,
                             r.oom ? fmt::format("  OOM under {}", format_size(*options.capacity)) : "");
  }
  std::cout << '\n';
  if (!adv.best) {
    std::cout << "Every setting runs out of memory at this capacity: less memory must be live.\n";
    return;
  }
  const ranked_result& best = adv.ranked[*adv.best];
  const std::uint64_t baseline_peak = adv.baseline ? adv.ranked[*adv.baseline].result.peak_reserved : 0;
  const auto saving = [&](const ranked_result& r) {
    if (baseline_peak == 0 || r.result.peak_reserved >= baseline_peak) return std::string();
    return fmt::format(" (saves {} of peak reserved memory against the recorded settings)",
                       format_size(baseline_peak - r.result.peak_reserved));
  };
  if (adv.best_pytorch && *adv.best_pytorch != *adv.best) {
    const ranked_result& bp = adv.ranked[*adv.best_pytorch];
    std::cout << "With PyTorch's own allocator, use" << saving(bp) << ":\n  export "
              << environment_line(bp.settings) << "\n";
  }
  std::cout << "Best overall" << saving(best) << ":\n  export " << environment_line(best.settings) << "\n";
}

void run_explain(const explain_args& a) {
  require_readable_file(a.trace);
  const snapshot snap = read_snapshot(a.trace);
  const trace_model model = build_trace_model(snap, pick_device(snap, a.device, a.trace));
  const oom_explanation x = explain_oom(model, capacity_of(a.capacity));
  if (!a.json) {
    std::cout << x.text << '\n';
    return;
  }
  const auto pool_json = [](const pool_summary& p) {
    return nlohmann::json{{"segments", p.segments}, {"reserved", p.reserved}, {"allocated", p.allocated},
                          {"free", p.free}, {"largest_free", p.largest_free},
                          {"free_fragments", p.free_fragments}};
  };
  print_json({{"found", x.found},
              {"recorded", x.recorded},
              {"entry", x.entry},
              {"request", x.request},
              {"device_free", x.device_free},
              {"reserved", x.reserved},
              {"allocated", x.allocated},
              {"pending_free", x.pending_free},
              {"other_processes", x.other_processes ? nlohmann::json(*x.other_processes) : nullptr},
              {"large_pool", pool_json(x.large)},
              {"small_pool", pool_json(x.small)},
              {"would_serve", x.would_serve},
              {"would_not", x.would_not},
              {"text", x.text}});
}

}  // namespace

void add_mem_advise_commands(CLI::App& mem) {
  auto advise_cmd = std::make_shared<advise_args>();
  CLI::App* ad = mem.add_subcommand(
      "advise", "Replay a snapshot under many allocator settings and recommend the best");
  ad->add_option("trace", advise_cmd->trace, "Snapshot file (pickle or JSON)")->required();
  ad->add_option("--device", advise_cmd->device, "Device to replay (default: the one with most events)");
  ad->add_option("--capacity", advise_cmd->capacity, "Device memory, e.g. 24GiB: settings that OOM are marked");
  ad->add_option("--threads", advise_cmd->threads, "Replays in parallel (default: all cores)");
  ad->add_option("--html", advise_cmd->html, "Also write a self-contained HTML report");
  add_json_flag(ad, advise_cmd->json);
  ad->callback([advise_cmd] { run_advise(*advise_cmd); });

  auto explain_cmd = std::make_shared<explain_args>();
  CLI::App* ex = mem.add_subcommand(
      "explain", "Say where the memory was at an OOM and which setting would have avoided it");
  ex->add_option("trace", explain_cmd->trace, "Snapshot file (pickle or JSON)")->required();
  ex->add_option("--device", explain_cmd->device, "Device (default: the one with most events)");
  ex->add_option("--capacity", explain_cmd->capacity,
                 "Device memory: explain where the trace would run out on a device this size");
  add_json_flag(ex, explain_cmd->json);
  ex->callback([explain_cmd] { run_explain(*explain_cmd); });
}

}  // namespace keel::cli
