// `keel mem compare A B`: what grew between two memory snapshots (keel/memory/compare.hpp).
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli.hpp"
#include "keel/memory/compare.hpp"
#include "keel/memory/snapshot.hpp"

namespace keel::cli {
namespace {

struct compare_args {
  std::string a, b;
  std::optional<int> device;
  std::size_t top = 10;
  bool json = false;
};

void run_compare(const compare_args& args) {
  require_readable_file(args.a);
  require_readable_file(args.b);
  const memory::snapshot a = memory::read_snapshot(args.a);
  const memory::snapshot b = memory::read_snapshot(args.b);
  memory::compare_options options;
  options.device = args.device;
  options.name_a = args.a;
  options.name_b = args.b;
  const memory::snapshot_diff diff = memory::compare_snapshots(a, b, options);
  if (args.json) {
    print_json(memory::to_json(diff, args.top));
  } else {
    memory::write_compare_text(std::cout, diff, args.top);
  }
}

}  // namespace

void add_mem_compare_command(CLI::App& mem) {
  auto args = std::make_shared<compare_args>();
  CLI::App* cmd = mem.add_subcommand(
      "compare",
      "What changed between two snapshots: totals per device, call sites, segments, pools");
  cmd->add_option("a", args->a, "The earlier snapshot (pickle from _dump_snapshot, or JSON)")
      ->required();
  cmd->add_option("b", args->b, "The later snapshot")->required();
  add_number(cmd, "--device", args->device, "Compare only this device (default: every device)", 0,
             65535);
  add_number(cmd, "--top", args->top, "Rows per list, largest change first (0: all)")
      ->capture_default_str();
  add_json_flag(cmd, args->json);
  cmd->callback([args] { run_compare(*args); });
}

}  // namespace keel::cli
