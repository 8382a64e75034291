// `keel kv`: KV-cache block manager: replay request traces, compare eviction policies
#include "cli.hpp"

namespace keel::cli {

void add_kv_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand("kv", "KV-cache block manager: replay request traces, compare eviction policies");
  group->require_subcommand(1);
}

}  // namespace keel::cli
