// `keel comm`: Collective communication: launch ranks, benchmark collectives
#include "cli.hpp"

namespace keel::cli {

void add_comm_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand("comm", "Collective communication: launch ranks, benchmark collectives");
  group->require_subcommand(1);
}

}  // namespace keel::cli
