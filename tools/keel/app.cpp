// The `keel` command line as one function, shared by the executable and `python3 -m keel`.
#include <clocale>

#include "cli.hpp"
#include "keel/core/config.hpp"

namespace keel::cli {

int run_keel(int argc, char** argv) {
  std::setlocale(LC_NUMERIC, "C");
  CLI::App app{"keel: the runtime pieces under a deep-learning framework", "keel"};
  app.set_version_flag("--version", "keel " KEEL_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough(false);
  add_mem_commands(app);
  add_rand_commands(app);
  add_kv_commands(app);
  add_perf_commands(app);
  add_gpus_commands(app);
  add_comm_commands(app);
  return run(app, argc, argv);
}

}  // namespace keel::cli
