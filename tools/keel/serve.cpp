// `keel serve`: the models of a repository in Triton's layout served at once over the KServe
// v2 HTTP protocol (keel::serve's server and http_server), and `keel serve bench`, its load
// generator (serve_bench.cpp).
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "cli.hpp"
#include "keel/core/bytes.hpp"
#include "keel/serve/backend.hpp"
#include "keel/serve/http_server.hpp"

namespace keel::cli {

void add_serve_commands(CLI::App& root) {
  struct serve_args {
    std::string repository;
    serve::http_options http;
    int threads = 0;
    std::string memory = "none";
    std::string max_body = "256MiB";
    std::optional<int> metrics_port;
  };
  auto args = std::make_shared<serve_args>();
  CLI::App* cmd = root.add_subcommand(
      "serve",
      "Serve a model repository (REPO/NAME/config.pbtxt, REPO/NAME/VERSION/model.pt) over the "
      "KServe v2 HTTP protocol; `keel serve bench URL` measures a server");
  cmd->add_option("repository", args->repository, "Model repository folder");
  add_number(cmd, "--http", args->http.port, "HTTP port (0: any free port)", 0, 65535)
      ->capture_default_str();
  cmd->add_option("--host", args->http.host, "Address to listen on")->capture_default_str();
  add_number(cmd, "--metrics-port", args->metrics_port,
             "Prometheus metrics port, GET /metrics (0: any free port; default: none)", 0, 65535);
  add_number(cmd, "--threads", args->threads,
             "Intra-op threads shared by every model (default: KEEL_SERVE_THREADS, else the "
             "machine's hardware threads)",
             1, 4096);
  cmd->add_option("--memory", args->memory,
                  "Memory budget for resident models, e.g. 8GiB; least recently used idle models "
                  "are unloaded to stay within it (none: no budget)")
      ->capture_default_str();
  cmd->add_option("--max-body", args->max_body, "Largest request body accepted (413 above)")
      ->capture_default_str();
  add_number(cmd, "--connections", args->http.connection_threads, "Connections served at once", 1,
             4096)
      ->capture_default_str();
  add_serve_bench_command(*cmd);
  cmd->callback([args, cmd] {
    if (cmd->got_subcommand("bench")) return;
    if (args->repository.empty())
      throw keel::invalid_argument("keel serve: give a model repository folder (or `bench URL`)");
    args->http.max_body_bytes = parse_size(args->max_body);
    args->http.metrics_port = args->metrics_port.value_or(-1);
    serve::server_options models{args->repository, serve::load_backend("torchscript"),
                                 args->threads,
                                 args->memory == "none" ? 0 : parse_size(args->memory)};
    serve::serve_until_signal(
        std::move(models), args->http, [&](const serve::server& s, const serve::http_server& h) {
          int ready = 0, total = 0;
          for (const serve::model_report& r : s.models()) {
            ++total;
            if (r.state == serve::model_state::ready)
              ++ready;
            else
              fmt::print(stderr, "keel serve: {} {}: {}\n", r.name, serve::name_of(r.state),
                         r.reason);
          }
          fmt::print(stderr, "keel serve: {} of {} model versions ready, {} threads, memory {}\n",
                     ready, total, s.threads(),
                     s.memory_budget() == 0 ? "unlimited" : format_size(s.memory_budget()));
          if (h.metrics_port() >= 0)
            fmt::print(stderr, "keel serve: metrics on http://{}:{}/metrics\n", args->http.host,
                       h.metrics_port());
          fmt::print(stderr, "keel serve: listening on http://{}:{}\n", args->http.host, h.port());
        });
    fmt::print(stderr, "keel serve: stopped\n");
  });
}

}  // namespace keel::cli
