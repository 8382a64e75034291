// `keel gpus`: GPU database: specs, support for CUDA/cuDNN versions, which card to pick
#include "cli.hpp"

namespace keel::cli {

void add_gpus_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand("gpus", "GPU database: specs, support for CUDA/cuDNN versions, which card to pick");
  group->require_subcommand(1);
}

}  // namespace keel::cli
