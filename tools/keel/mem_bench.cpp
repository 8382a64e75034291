// `keel mem bench`: options of the allocator benchmark (keel/memory/allocator_bench.hpp), its
// table or JSON document, and the one thing a library must not do, re-executing the process.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/allocator_bench.hpp"
#include "mem_report.hpp"

namespace keel::cli {
namespace {

using namespace keel::memory;

// Debian's libjemalloc.so.2 keeps its thread state in initial-exec TLS, which a dlopen'd
// library can only get from glibc's small surplus of static TLS. When that is too small, the
// bench re-executes itself once with more surplus reserved (the glibc.rtld.optional_static_tls
// tunable); jemalloc is still loaded with dlopen, not preloaded.
void reexec_with_static_tls_for_jemalloc() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.rtld.optional_static_tls") != nullptr)
    return;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  if (args.empty()) return;
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::string value = "glibc.rtld.optional_static_tls=16384";
  if (tunables != nullptr && *tunables != '\0') value = std::string(tunables) + ":" + value;
  std::cout.flush();
  setenv("GLIBC_TUNABLES", value.c_str(), 1);
  execv("/proc/self/exe", argv.data());
  // exec failed: carry on; jemalloc's row will say why it could not be loaded
  if (tunables != nullptr) {
    setenv("GLIBC_TUNABLES", tunables, 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

struct bench_args {
  bench_options options;
  bool json = false;
};

void run_bench(bench_args a) {
  a.options.on_static_tls_shortage = reexec_with_static_tls_for_jemalloc;
  const bench_result r = run_allocator_bench(a.options);
  if (a.json) {
    print_json(r.document);
  } else {
    std::cout << to_text(r);
  }
}

}  // namespace

void add_mem_bench_command(CLI::App& mem) {
  auto o = std::make_shared<bench_args>();
  CLI::App* cmd = mem.add_subcommand(
      "bench",
      "Time alloc+free of keel's allocator (keel and pytorch policies) against glibc malloc, "
      "jemalloc and mimalloc on one replayed sequence");
  cmd->add_option(
      "--trace", o->options.trace,
      "Replay the alloc/free trace of a PyTorch memory snapshot (pickle or JSON) instead of "
      "the built-in transformer training-step mix");
  add_number(cmd, "--threads", o->options.threads,
             "Threads replaying the sequence at once against one allocator", 1, 256);
  add_number(cmd, "--ops", o->options.ops,
             "Alloc+free pairs per pass (built-in mix: default 20000; trace: repeated until at "
             "least this many, default once)",
             1, k_bench_max_ops);
  add_number(cmd, "--repeat", o->options.repeat,
             "Timed passes per allocator (the median is reported)", 1, 100);
  cmd->add_option("--allocators", o->options.allocators,
                  "Comma-separated subset of keel,pytorch,glibc,jemalloc,mimalloc");
  cmd->add_option_function<std::string>(
      "--capacity",
      [o](const std::string& text) {
        // As every `keel mem` command: 0 is an error, the default is the option's absence.
        const std::uint64_t bytes = capacity_option(text).value();
        if (bytes > k_bench_max_capacity) {
          throw invalid_argument(
              fmt::format("--capacity {} is larger than {}, the most the host "
                          "backend can reserve address space for",
                          text, format_size_exact(k_bench_max_capacity)));
        }
        o->options.capacity = bytes;
      },
      "Device size the host backend pretends to have (default 80GiB); expandable segments "
      "reserve 1.125x this in address space");
  add_json_flag(cmd, o->json);
  cmd->callback([o] { run_bench(*o); });
}

}  // namespace keel::cli
