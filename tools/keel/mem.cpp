// `keel mem`: GPU memory: replay PyTorch snapshots, explain OOMs, advise allocator settings
#include "cli.hpp"

namespace keel::cli {

void add_mem_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand("mem", "GPU memory: replay PyTorch snapshots, explain OOMs, advise allocator settings");
  group->require_subcommand(1);
}

}  // namespace keel::cli
