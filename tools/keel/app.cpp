// The `keel` command line as one function, shared by the executable and `python3 -m keel`.
#include "cli.hpp"

#include <algorithm>
#include <utility>
#include "keel/comm/launcher.hpp"
#include "keel/core/config.hpp"

namespace keel::cli {
namespace {
invocation g_invocation;
}  // namespace

const invocation& this_invocation() {
  if (g_invocation.program.empty()) g_invocation.program = {keel::comm::self_executable()};
  return g_invocation;
}

int run_keel(int argc, char** argv, std::vector<std::string> program) {
  g_invocation = {std::move(program),
                  std::vector<std::string>(argv + std::min(argc, 1), argv + argc)};
  CLI::App app{"keel: the runtime pieces under a deep-learning framework", "keel"};
  app.set_version_flag("--version", "keel " KEEL_VERSION_STRING);
  add_all_commands(app);
  return run(app, argc, argv);
}

}  // namespace keel::cli
