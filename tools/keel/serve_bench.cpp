// `keel serve bench URL`: the load generator (keel::serve::run_bench), in the spirit of
// Triton's perf_analyzer; this file parses and prints.
#include <limits>
#include <memory>

#include "cli.hpp"
#include "keel/serve/load_generator.hpp"

namespace keel::cli {

void add_serve_bench_command(CLI::App& serve) {
  struct bench_args {
    serve::bench_options options;
    bool json_data = false;
    bool json = false;
  };
  auto args = std::make_shared<bench_args>();
  serve::bench_options& o = args->options;
  CLI::App* cmd = serve.add_subcommand(
      "bench",
      "Measure a KServe v2 server: throughput and latency percentiles per concurrency level, "
      "and the server's queue/compute split");
  cmd->add_option("url", o.url, "Server address, http://HOST:PORT")->required();
  cmd->add_option("--model", o.models, "Models to load, spread over the clients (a,b,c)")
      ->delimiter(',')
      ->required();
  add_number(cmd, "--concurrency", o.concurrency, "Concurrent clients, one level each (1,2,4)", 1,
             4096)
      ->delimiter(',')
      ->capture_default_str();
  add_number(cmd, "--rate", o.rate,
             "Requests per second on a fixed schedule (open loop); 0: closed loop", 0.0, 1e7)
      ->capture_default_str();
  add_number(cmd, "--duration", o.duration_s, "Seconds measured per level", 0.0, 86400.0, true)
      ->capture_default_str();
  add_number(cmd, "--warmup", o.warmup_s, "Seconds run before each level's measurement", 0.0,
             3600.0)
      ->capture_default_str();
  add_number(cmd, "--batch", o.batch, "Rows per request for a batching model", 1, 1 << 20)
      ->capture_default_str();
  add_number(cmd, "--seed", o.seed, "Seed of the random input data")->capture_default_str();
  cmd->add_flag("--json-data", args->json_data,
                "Send and receive tensors as JSON (default: the binary extension)");
  add_json_flag(cmd, args->json);
  cmd->callback([args] {
    args->options.binary = !args->json_data;
    print_result(args->json, serve::run_bench(args->options));
  });
}

}  // namespace keel::cli
