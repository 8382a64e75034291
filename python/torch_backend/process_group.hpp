// keel::torch_backend::process_group — a c10d::ProcessGroup over keel::comm, the "keel"
// backend of torch.distributed (`import keel.torch`, then dist.init_process_group("keel")).
//
// Construction is collective, as keel::comm::communicator's: every rank passes the c10d
// store torch made (env://'s TCPStore behind init_process_group's PrefixStore), its rank,
// the group size and the timeout; the communicator rendezvouses through the store
// (c10d_store.hpp) and uses it no more afterwards. The timeout bounds every collective
// (a per-call opts.timeout wins).
//
// Every operation is queued and run in order on one worker thread that owns the
// communicator (keel's "one thread at a time"), and returns at once a work object:
// isCompleted() polls, wait() blocks and rethrows the operation's error, getFuture() is a
// c10 Future completed with the output tensors (what DDP's comm hooks chain on). Ranks must
// issue the same operations in the same order, as with every backend; point-to-point
// operations are ordered with the collectives, so an isend whose matching irecv the peer
// queued behind a blocking operation of its own waits for it (tags are not matched: each
// pair's messages arrive in the order they were sent).
//
// Tensors: CPU, dense, contiguous. Reductions (all_reduce, reduce, reduce_scatter) take
// float32, float64, float16, bfloat16, int32, int64 and uint8 with SUM, PRODUCT, MIN, MAX
// and AVG; data movement (broadcast, all_gather, all_to_all, gather, scatter, send/recv)
// takes any dtype (it moves bytes). Uneven all_to_all splits and lists of differently sized
// tensors run as a pairwise exchange of sends and receives. What keel cannot do (another
// device, a sparse or non-contiguous tensor, BAND/BOR/BXOR, PREMUL_SUM, recv from any
// source) throws keel::invalid_argument when the operation is issued, naming the rank.
// keel::comm's timeout_error, peer_error and mismatch_error come out of wait() unchanged:
// the extension maps them to keel.CommTimeoutError, keel.PeerError and keel.CommError.
// After such an error the communicator is aborted, every queued and later operation fails
// with peer_error at once.
//
// Destruction (destroy_process_group, the last reference) lets the worker finish what is
// queued, then closes the communicator (peers see peer_error if they still call).
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "keel/comm/communicator.hpp"

namespace keel::torch_backend {

class process_group final : public c10d::ProcessGroup {
 public:
  process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                std::chrono::milliseconds timeout);
  ~process_group() override;

  const std::string getBackendName() const override { return "keel"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return issued_; }

  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  // Operations issued so far, and those not finished yet.
  std::uint64_t issued() const noexcept { return issued_; }
  std::size_t pending();

 private:
  class work;
  using task = std::function<void(keel::comm::communicator&)>;
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char* name,
                                         std::vector<at::Tensor> outputs, task run);
  void loop();
  std::string where(const char* op) const;

  std::unique_ptr<keel::comm::communicator> comm_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<c10::intrusive_ptr<work>, task>> queue_;
  bool stop_ = false;
  std::atomic<std::uint64_t> issued_{0};
  std::thread worker_;
};

}  // namespace keel::torch_backend
