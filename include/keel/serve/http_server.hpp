// keel::serve::http_server — the KServe v2 inference protocol over HTTP/REST, as Triton
// Inference Server implements it, in front of a keel::serve::server (cpp-httplib).
//
// Endpoints: GET /v2/health/live, /v2/health/ready, /v2; GET /v2/models/NAME[/versions/V]
// (metadata), .../ready, .../config, .../stats and /v2/models/stats; POST .../infer (JSON
// tensors and the binary-tensor extension); POST /v2/repository/index and
// /v2/repository/models/NAME/load|unload. On the metrics port (when enabled), GET /metrics in
// Prometheus' text format. Errors are the protocol's {"error": "..."}: 400 for a request that
// does not fit (malformed JSON, wrong shape or datatype), 404 for an unknown model or version
// or path, 413 for a body over max_body_bytes, 503 when the server is right to refuse (queue
// full, timed out, model not ready, shutting down), 500 for anything else; nothing a client
// sends can stop the server.
//
// The constructor binds both ports (keel::io_error when one is taken) and starts serving;
// stop() drains: requests already received are answered, new ones get 503 until the
// listeners close. The destructor stops. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "keel/serve/server.hpp"

namespace keel::serve {

struct http_options {
  std::string host = "127.0.0.1";
  int port = 8000;                          // 0: any free port
  int metrics_port = -1;                    // -1: no metrics listener; 0: any free port
  std::size_t max_body_bytes = 256u << 20;  // larger bodies get 413
  int connection_threads = 4096;  // connections served at once, a thread each (started on demand)
};

class http_server {
 public:
  http_server(server& models, http_options options);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  int port() const noexcept;
  int metrics_port() const noexcept;  // -1 when disabled
  // Drains in-flight requests, then closes the listeners. Idempotent.
  void stop();

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

// `keel serve`: loads the repository, serves it over HTTP until SIGTERM or SIGINT, then drains
// and returns. `ready` is called once every port listens (the CLI prints the addresses).
// Blocks those signals in the calling thread first, so call it before starting other threads.
void serve_until_signal(server_options models, const http_options& options,
                        const std::function<void(const server&, const http_server&)>& ready);

}  // namespace keel::serve
