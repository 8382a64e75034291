// `keel perf`: Roofline performance model for ops, LLMs and ONNX graphs
#include "cli.hpp"

namespace keel::cli {

void add_perf_commands(CLI::App& root) {
  CLI::App* group = root.add_subcommand("perf", "Roofline performance model for ops, LLMs and ONNX graphs");
  group->require_subcommand(1);
}

}  // namespace keel::cli
