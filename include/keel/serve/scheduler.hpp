// keel::serve::model_scheduler — one model's request queue, dynamic batcher and instances.
//
// submit() queues a request and returns a ticket: its id (for cancel()) and a future of the
// outputs; the callback form calls `done` exactly once instead, on the worker that answered
// (or in cancel()'s caller), so that a caller can chain work without a waiting thread. Each
// instance has one worker thread. A worker takes the oldest request of the highest priority level
// (1 is the highest, as in Triton) and, with dynamic batching, joins the requests behind it whose
// inputs batch with it (same dtypes and shapes beyond dimension 0) while the rows fit
// max_batch_size: it runs at once when the batch reaches max_batch_size or the largest preferred
// size reachable, else waits up to max_queue_delay_microseconds after the oldest request arrived
// for more. The batch runs with the intra-op threads of a thread_budget lease; outputs are split
// back by rows.
//
// A request that cannot be served is answered, never dropped: a full queue (max_queue_size)
// fails submit() itself with request_rejected; a request whose deadline (the queue policy's
// default_timeout_microseconds, or the request's own shorter timeout when
// allow_timeout_override) passes while queued is answered with request_rejected "timed out"
// and not run (DELAY: it stays queued and is run); cancel() answers a queued request
// with request_rejected "cancelled"; a model error fails the whole batch's futures with the
// model's keel::invalid_argument. The destructor stops accepting, runs what is queued and
// joins the workers. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/serve/model.hpp"
#include "keel/serve/model_config.hpp"
#include "keel/serve/thread_budget.hpp"

namespace keel::serve {

// The server could not take or finish a request it was right to refuse (queue full, timed
// out, cancelled, shutting down): the protocol's "unavailable".
class request_rejected : public keel::detail::error_of<std::runtime_error> {
 public:
  using error_of::error_of;
};

struct infer_request {
  std::vector<tensor> inputs;    // in the configuration's input order
  std::uint32_t priority = 0;    // 0: the model's default level
  std::uint64_t timeout_us = 0;  // 0: the queue policy's
};

// Where a request's time went: queued (arrival to the start of its batch's run, or to its
// answer when it never ran) and computing (its batch's run).
struct request_timing {
  std::uint64_t queue_us = 0;
  std::uint64_t compute_us = 0;
};

// Gets the outputs (error null) or the error that ended the request (outputs empty), and the
// request's timing. Must not throw: what it throws is dropped.
using infer_callback = std::function<void(std::vector<tensor> outputs, std::exception_ptr error,
                                          request_timing timing)>;

// A callback that fulfils `outputs` with the outputs or the error; with `timing`, it stores the
// request's timing there first (visible to whoever get()s the future).
infer_callback fulfil(std::shared_ptr<std::promise<std::vector<tensor>>> outputs,
                      std::shared_ptr<request_timing> timing = nullptr);

struct ticket {
  std::uint64_t id = 0;
  std::future<std::vector<tensor>> outputs;
};

// Cumulative counts, as Triton's statistics extension reports them.
struct model_statistics {
  std::uint64_t success = 0;          // requests answered with outputs
  std::uint64_t failure = 0;          // requests answered with an error
  std::uint64_t inference_count = 0;  // rows inferred (batch size summed over requests)
  std::uint64_t execution_count = 0;  // model runs (batches)
  std::uint64_t queue_us = 0;         // time requests spent queued, summed
  std::uint64_t compute_us = 0;       // time in model runs, summed over requests
  std::uint64_t request_us = 0;       // submit to answer, summed over successful requests
  std::uint64_t pending = 0;          // queued now
};

// Checks `inputs` against the configuration: count, dtypes, shapes (the batch dimension within
// max_batch_size and equal across inputs). Returns the rows (1 without batching); throws
// keel::invalid_argument naming the first input that does not fit.
std::int64_t check_inputs(const model_config& config, const std::vector<tensor>& inputs);

class model_scheduler {
 public:
  model_scheduler(model_config config, std::vector<std::unique_ptr<model_instance>> instances,
                  thread_budget& budget);
  ~model_scheduler();
  model_scheduler(const model_scheduler&) = delete;
  model_scheduler& operator=(const model_scheduler&) = delete;

  // Checks the inputs (check_inputs) and queues the request.
  ticket submit(infer_request request);
  // The same, answering through `done`; returns the request's id.
  std::uint64_t submit(infer_request request, infer_callback done);
  // Answers a queued request with "cancelled"; false when it is already running or answered.
  bool cancel(std::uint64_t id);
  model_statistics statistics() const;
  const model_config& config() const noexcept;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace keel::serve
