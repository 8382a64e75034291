// keel — one command line for keel's libraries: memory, random, kv, perf, gpus, comm.
#include <clocale>

#include "cli.hpp"
#include "keel/core/config.hpp"

int main(int argc, char** argv) {
  std::setlocale(LC_ALL, "C");
  CLI::App app{"keel: the runtime pieces under a deep-learning framework", "keel"};
  app.set_version_flag("--version", "keel " KEEL_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough(false);
  keel::cli::add_mem_commands(app);
  keel::cli::add_rand_commands(app);
  keel::cli::add_kv_commands(app);
  keel::cli::add_perf_commands(app);
  keel::cli::add_gpus_commands(app);
  keel::cli::add_comm_commands(app);
  return keel::cli::run(app, argc, argv);
}
