// keel::serve::run_bench — a load generator for KServe v2 servers (keel's, Triton, any peer that
// speaks the HTTP/REST protocol), in the spirit of Triton's perf_analyzer: for each concurrency
// level it runs that many clients, each on one persistent HTTP connection sending infer
// requests to one model (client i to models[i % models.size()]), and reports throughput and
// client-side latency percentiles, plus the server's own split of the time (queue, compute)
// from the statistics extension when the server has it.
//
// Inputs come from each model's metadata (GET /v2/models/NAME) and configuration (GET
// /v2/models/NAME/config, for max_batch_size; a server without it is taken as not batching):
// a batching model gets `batch` rows, other variable (-1) extents are 1 unless `shapes` names
// the input; the data is random, from `seed`: floats in [0, 1), integers in [0, 100) (valid
// token ids), booleans. One request body per model is encoded up front and sent by all of its
// clients.
//
// Closed loop (rate 0): each client sends its next request as soon as the last is answered;
// latency is send to answer. Open loop (rate > 0): the requests are due on one fixed schedule
// of `rate` per second shared by all clients of the level, and latency counts from the due
// time, so that a server (or a client pool) that falls behind shows it rather than hides it.
// Each level runs warmup_s, then measures duration_s: requests answered inside the window
// count; an answer that is not HTTP 200 with a well-formed response is an error (one
// error's message is kept). The server split is the delta of GET /v2/models/NAME/stats over
// the window, divided by the delta of successful requests, summed over the models.
//
// run_bench blocks for the whole run; it throws keel::invalid_argument for options outside
// their domain or a model the server does not describe, and keel::io_error (one line) when
// the server cannot be reached. Errors of individual requests are counted, not thrown.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace keel::serve {

struct bench_options {
  std::string url;                  // http://HOST:PORT
  std::vector<std::string> models;  // at least one
  std::vector<int> concurrency{1};  // one level each, every value >= 1
  double rate = 0;                  // requests per second; 0: closed loop
  double duration_s = 5;            // measured, per level (> 0)
  double warmup_s = 1;              // before each level's measurement (>= 0)
  bool binary = true;               // binary tensor data for inputs and outputs, else JSON
  std::uint64_t seed = 1;
  std::int64_t batch = 1;  // rows per request for a batching model (<= its max_batch_size)
  std::map<std::string, std::vector<std::int64_t>> shapes;  // input -> dims, batch excluded
};

struct bench_level {
  int concurrency = 0;
  double rate = 0;
  std::uint64_t requests = 0;  // answered successfully in the window
  std::uint64_t errors = 0;
  std::string first_error;
  double error_p50_us = 0, error_p99_us = 0;  // how fast the errors came back
  double throughput_rps = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0, mean_us = 0;  // over successful requests
  // Per successful request, from the server's statistics; absent when it has none.
  std::optional<double> server_queue_us, server_compute_us;
};

struct bench_report {
  std::string url;
  std::vector<std::string> models;
  std::vector<bench_level> levels;
};

bench_report run_bench(const bench_options& options);

// {"url", "models", "levels": [{"concurrency", "rate", "requests", "errors", "first_error"?,
// "error_p50_us"?, "error_p99_us"? (the three with errors),
// "throughput_rps", "p50_us", "p90_us", "p99_us", "mean_us", "server_queue_us"?,
// "server_compute_us"?}]}.
nlohmann::json to_json(const bench_report& report);
// A perf_analyzer-like summary, one line per level.
std::string to_text(const bench_report& report);

// The nearest-rank percentile (p in (0, 100]) of ascending `sorted`; 0 when it is empty.
double percentile(std::span<const double> sorted, double p);

}  // namespace keel::serve
