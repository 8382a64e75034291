// The `keel` command line as one function, shared by the executable and `python3 -m keel`.
#include "cli.hpp"
#include "keel/core/config.hpp"

namespace keel::cli {

int run_keel(int argc, char** argv) {
  CLI::App app{"keel: the runtime pieces under a deep-learning framework", "keel"};
  app.set_version_flag("--version", "keel " KEEL_VERSION_STRING);
  add_all_commands(app);
  return run(app, argc, argv);
}

}  // namespace keel::cli
