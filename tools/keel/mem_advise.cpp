// `keel mem advise` and `keel mem explain`.
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "cli.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/analysis.hpp"
#include "keel/memory/report_html.hpp"
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
  std::string sites_by = "site";
  bool json = false;
};

// A progress bar on a terminal (stderr), nothing otherwise.
std::function<void(std::size_t, std::size_t)> progress_bar() {
  if (isatty(STDERR_FILENO) == 0) return {};
  return [](std::size_t done, std::size_t total) {
    const std::size_t width = 30;
    const std::size_t filled = done * width / total;
    std::cerr << fmt::format("\r[{}{}] {}/{} replays", std::string(filled, '#'),
                             std::string(width - filled, ' '), done, total)
              << (done == total ? "\r\033[K" : "") << std::flush;
  };
}

void run_advise(const advise_args& a) {
  require_readable_file(a.trace);
  const snapshot snap = read_snapshot(a.trace);
  analysis_options options;
  options.device = a.device;
  options.capacity = capacity_option(a.capacity);
  options.threads = a.threads;
  options.progress = progress_bar();
  const analysis result = analyze(snap, a.trace, options);
  const nlohmann::json document = to_json(result);
  if (a.html) write_html_report(*a.html, snap, document);
  if (a.json) {
    print_json(document);
  } else {
    std::cout << to_text(result);
  }
}

void run_explain(const explain_args& a) {
  require_readable_file(a.trace);
  const snapshot snap = read_snapshot(a.trace);
  callsite_options sites;
  sites.group_by = parse_callsite_grouping(a.sites_by);
  const std::vector<oom_explanation> xs =
      explain_devices(snap, a.device, capacity_option(a.capacity), sites);
  if (a.json) {
    print_json(to_json(xs, a.trace));
  } else {
    std::cout << to_text(xs);
  }
}

}  // namespace

std::optional<std::uint64_t> capacity_option(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::uint64_t bytes = 0;
  try {
    bytes = parse_size(*text);
  } catch (const invalid_argument& e) {
    throw invalid_argument(fmt::format("--capacity: {}", e.what()));
  }
  if (bytes == 0) throw invalid_argument("--capacity must be larger than 0");
  return bytes;
}

void write_report(const std::string& path, const snapshot& snap, const std::string& trace,
                  std::optional<int> device, std::optional<std::uint64_t> capacity) {
  analysis_options options;
  options.device = device;
  options.capacity = capacity;
  write_html_report(path, snap, to_json(analyze(snap, trace, options)));
}

void add_mem_advise_commands(CLI::App& mem) {
  auto advise_cmd = std::make_shared<advise_args>();
  CLI::App* ad = mem.add_subcommand(
      "advise",
      "Replay a snapshot under many allocator settings, from the same start, and recommend one");
  ad->add_option("trace", advise_cmd->trace, "Snapshot file (pickle or JSON)")->required();
  add_number(ad, "--device", advise_cmd->device, "Device (default: every device with data)", 0,
             k_max_device);
  ad->add_option("--capacity", advise_cmd->capacity,
                 "Memory this process can use, e.g. 24GiB (default: what a recorded OOM implies, "
                 "else unlimited)");
  add_number(ad, "--threads", advise_cmd->threads, "Replays in parallel (default: all cores)", 1u,
             1024u);
  ad->add_option("--html", advise_cmd->html, "Also write a self-contained HTML report");
  add_json_flag(ad, advise_cmd->json);
  ad->callback([advise_cmd] { run_advise(*advise_cmd); });

  auto explain_cmd = std::make_shared<explain_args>();
  CLI::App* ex = mem.add_subcommand(
      "explain",
      "Say where the memory was at an OOM, why it failed and which setting would have served it");
  ex->add_option("trace", explain_cmd->trace, "Snapshot file (pickle or JSON)")->required();
  add_number(ex, "--device", explain_cmd->device, "Device (default: every device with data)", 0,
             k_max_device);
  ex->add_option("--capacity", explain_cmd->capacity,
                 "Device memory: explain where the trace would run out on a device this size");
  ex->add_option("--sites-by", explain_cmd->sites_by,
                 "Group the live memory by call site or by module")
      ->capture_default_str();
  add_json_flag(ex, explain_cmd->json);
  ex->callback([explain_cmd] { run_explain(*explain_cmd); });
}

}  // namespace keel::cli
