// keel — one command line for keel's libraries: memory, random, kv, perf, gpus, comm,
// serve.
#include <clocale>

#include "cli.hpp"

int main(int argc, char** argv) {
  std::setlocale(LC_ALL, "C");
  return keel::cli::run_keel(argc, argv);
}
