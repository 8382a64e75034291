// keel::serve::server — the models of one repository served at once: loading, versions,
// ensembles, one thread budget and one memory budget for all of them. The HTTP front
// (http_server.hpp) and an embedding program call the same object.
//
// At construction every model of the repository (scan_repository) is loaded: each served
// version gets config.instance_count instances from the loader, is warmed up (model_warmup:
// each sample run `count` times on every instance) and gets a model_scheduler drawing intra-op
// threads from the server's one thread_budget. A model that fails to load keeps its error
// (models(), the repository index) and the others serve; load()/unload() re-read or drop one
// model at run time (Triton's repository extension).
//
// Memory budget (options.memory_bytes, 0: none): a version's resident size is measured at
// load (the instances' resident_bytes(), summed). When a load takes the resident total over
// the budget, the least recently used idle versions (nothing queued or running) are evicted
// until it fits; an evicted version stays READY and is reloaded by its next request, which
// waits for that load (counted in loads / load_us). A version that cannot fit even with
// every idle one evicted fails its load with request_rejected naming the sizes.
//
// Ensembles (platform "ensemble") run as DAGs: a step is submitted as soon as every ensemble
// tensor it reads exists, on the worker thread that produced the last of them, so outputs feed
// the next model without a round trip; the ensemble's inputs and outputs are checked against
// its configuration like any model's. Cancelling an ensemble request cancels its queued steps
// and submits no more.
//
// infer() checks the request (keel::invalid_argument: wrong count, dtype or shape; model_
// not_found: no such model or version; request_rejected: a model that failed to load or is
// not ready, queue full, shutting down) and returns a handle whose future gets the outputs in the
// configuration's output order or the error that ended the request. The destructor refuses new
// requests, answers what is queued and joins every worker. Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/serve/model.hpp"
#include "keel/serve/model_config.hpp"
#include "keel/serve/scheduler.hpp"

namespace keel::serve {

// No model (or no such version of it) in the repository: the protocol's "not found".
class model_not_found : public keel::invalid_argument {
 public:
  using invalid_argument::invalid_argument;
};

// Loads one instance of a non-ensemble model from its file (load_torchscript for
// "pytorch_libtorch"); throws keel::error on failure.
using model_loader = std::function<std::unique_ptr<model_instance>(const std::filesystem::path&,
                                                                   const model_config&)>;

struct server_options {
  std::filesystem::path repository;
  model_loader loader;
  int threads = 0;                 // the thread budget; 0: default_serve_threads()
  std::uint64_t memory_bytes = 0;  // 0: no memory budget
};

enum class model_state { ready, loading, unavailable, unloaded };

// One version of one model as the repository index, /stats and /metrics report it.
struct model_report {
  std::string name;
  std::int64_t version = 0;  // 0 for a model that failed before its versions were known
  model_state state = model_state::unavailable;
  std::string reason;     // why it is unavailable or unloaded
  bool resident = false;  // loaded now (false: evicted or never loaded)
  std::uint64_t resident_bytes = 0;
  std::uint64_t loads = 0;    // loads, the first one and every reload after an eviction
  std::uint64_t load_us = 0;  // time spent in them
  std::uint64_t evictions = 0;
  std::uint64_t last_inference_ms = 0;  // Unix time of the last request answered, 0: none
  model_statistics stats;               // summed over the version's schedulers' lives
};

struct infer_handle {
  std::string model;
  std::int64_t version = 0;
  std::uint64_t id = 0;
  std::future<std::vector<tensor>> outputs;
  // Filled before `outputs` is ready: the request's queue and compute time (an ensemble's
  // summed over its steps).
  std::shared_ptr<request_timing> timing;
};

class server {
 public:
  // Scans and loads the repository (keel::io_error when it is not a folder).
  explicit server(server_options options);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // version -1: the latest version served.
  infer_handle infer(std::string_view model, std::int64_t version, infer_request request);
  // Answers a queued request with request_rejected "cancelled"; false when it already ran.
  bool cancel(const infer_handle& handle);

  // The configuration of a served model (model_not_found for an unknown name,
  // request_rejected for a model whose configuration did not load).
  std::shared_ptr<const model_config> config(std::string_view model) const;
  // The versions served, ascending (throws as config()).
  std::vector<std::int64_t> versions(std::string_view model) const;
  // Whether the version can take requests now (an evicted one can: it reloads).
  bool ready(std::string_view model, std::int64_t version = -1) const;
  // Every model of the repository, by name then version, failed ones included.
  std::vector<model_report> models() const;

  // Re-reads REPO/NAME and (re)loads it; throws what made the load fail (the model then
  // reports it). Unknown folder: model_not_found.
  void load(std::string_view model);
  // Drains and drops every version of the model; it reports state unloaded.
  void unload(std::string_view model);

  int threads() const noexcept;
  std::uint64_t memory_budget() const noexcept;
  std::uint64_t resident_bytes() const;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

std::string_view name_of(model_state s) noexcept;  // "READY", "LOADING", "UNAVAILABLE", "UNLOADED"

}  // namespace keel::serve
