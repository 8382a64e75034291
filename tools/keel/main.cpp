// keel — one command line for keel's libraries: memory, random, kv, perf, gpus, comm.
#include <clocale>

#include "cli.hpp"
#include "keel/core/config.hpp"

int main(int argc, char** argv) {
  std::setlocale(LC_ALL, "C");
  CLI::App app{"keel: the runtime pieces under a deep-learning framework", "keel"};
  app.set_version_flag("--version", "keel " KEEL_VERSION_STRING);
  keel::cli::add_all_commands(app);
  return keel::cli::run(app, argc, argv);
}
