// `keel rand`: cuRAND-compatible random numbers on CPU, OpenCL and CUDA
#include "cli.hpp"

namespace keel::cli {

void add_rand_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand("rand", "cuRAND-compatible random numbers on CPU, OpenCL and CUDA");
  group->require_subcommand(1);
}

}  // namespace keel::cli
