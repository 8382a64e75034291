// The "keel" torch.distributed backend: process_group (process_group.hpp) over
// keel::comm, and the extension keel._keel_torch that makes one for
// torch.distributed.Backend.register_backend (keel/torch.py registers it). This is the
// only translation unit that includes libtorch's headers, which are slow to compile.
#include "process_group.hpp"

#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <ATen/core/ivalue.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <utility>

#include "c10d_store.hpp"
#include "keel/comm/error.hpp"
#include "keel/core/error.hpp"

// c10::intrusive_ptr as a pybind11 holder, as torch's own bindings declare it
// (torch/csrc/utils/pybind.h, not included: it drags in all of torch's Python headers).
PYBIND11_DECLARE_HOLDER_TYPE(T, c10::intrusive_ptr<T>, true);

namespace keel::torch_backend {
namespace {

namespace kc = keel::comm;
using ms = std::chrono::milliseconds;

std::optional<kc::dtype> reducible(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return kc::dtype::f32;
    case at::kDouble: return kc::dtype::f64;
    case at::kHalf: return kc::dtype::f16;
    case at::kBFloat16: return kc::dtype::bf16;
    case at::kInt: return kc::dtype::i32;
    case at::kLong: return kc::dtype::i64;
    case at::kByte: return kc::dtype::u8;
    default: return std::nullopt;
  }
}

void check_tensor(const at::Tensor& t, const std::string& where) {
  if (!t.defined()) throw keel::invalid_argument(where + "an undefined tensor");
  if (!t.device().is_cpu()) {
    throw keel::invalid_argument(where + "a tensor on " + t.device().str() +
                                 ": the keel backend takes CPU tensors");
  }
  if (t.layout() != c10::kStrided) {
    throw keel::invalid_argument(where + "a sparse tensor: the keel backend takes dense ones");
  }
  if (!t.is_contiguous()) {
    throw keel::invalid_argument(where + "a non-contiguous tensor (call .contiguous() first)");
  }
}

void check_tensors(const std::vector<at::Tensor>& ts, const std::string& where) {
  for (const auto& t : ts) check_tensor(t, where);
}

const at::Tensor& single(const std::vector<at::Tensor>& ts, const std::string& where) {
  if (ts.size() != 1) {
    throw keel::invalid_argument(where + "expected one tensor per call, got " +
                                 std::to_string(ts.size()));
  }
  check_tensor(ts[0], where);
  return ts[0];
}

kc::dtype reduce_dtype(const at::Tensor& t, const std::string& where) {
  const auto d = reducible(t.scalar_type());
  if (!d) {
    throw keel::invalid_argument(
        where + "cannot reduce " + std::string(c10::toString(t.scalar_type())) +
        " tensors (float32, float64, float16, bfloat16, int32, int64, uint8)");
  }
  return *d;
}

kc::reduce_op op_of(const c10d::ReduceOp& op, const std::string& where) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return kc::reduce_op::sum;
    case c10d::ReduceOp::AVG: return kc::reduce_op::avg;
    case c10d::ReduceOp::PRODUCT: return kc::reduce_op::prod;
    case c10d::ReduceOp::MIN: return kc::reduce_op::min;
    case c10d::ReduceOp::MAX: return kc::reduce_op::max;
    default:
      throw keel::invalid_argument(where + "reduction op " +
                                   std::to_string(static_cast<int>(op.op_)) +
                                   " is not supported (SUM, AVG, PRODUCT, MIN, MAX)");
  }
}

std::size_t nbytes(const at::Tensor& t) {
  return static_cast<std::size_t>(t.numel()) * t.element_size();
}

std::uint8_t* bytes_of(const at::Tensor& t) { return static_cast<std::uint8_t*>(t.data_ptr()); }

kc::call_options call(ms timeout) {
  kc::call_options o;
  if (timeout.count() > 0) o.timeout = timeout;
  return o;
}

void same_shape(const at::Tensor& a, const at::Tensor& b, const std::string& where,
                const char* what) {
  if (a.scalar_type() != b.scalar_type() || a.numel() != b.numel()) {
    throw keel::invalid_argument(where + what + ": " + std::string(c10::toString(a.scalar_type())) +
                                 "[" + std::to_string(a.numel()) + "] against " +
                                 std::string(c10::toString(b.scalar_type())) + "[" +
                                 std::to_string(b.numel()) + "]");
  }
}

// Every rank's bytes to every rank as a 1-factorisation of sends and receives: in step k rank
// r pairs with (k - r) mod n, the lower rank of a pair sends first, so no step waits on a
// rank busy elsewhere.
void pairwise(kc::communicator& c, int rank, int size, const std::vector<std::uint8_t*>& send_ptr,
              const std::vector<std::size_t>& send_bytes,
              const std::vector<std::uint8_t*>& recv_ptr,
              const std::vector<std::size_t>& recv_bytes, kc::call_options o) {
  if (recv_bytes[rank] > 0) std::memmove(recv_ptr[rank], send_ptr[rank], recv_bytes[rank]);
  for (int k = 0; k < size; ++k) {
    const int peer = ((k - rank) % size + size) % size;
    if (peer == rank) continue;
    auto out = [&] { c.send(send_ptr[peer], send_bytes[peer], kc::dtype::u8, peer, o); };
    auto in = [&] { c.recv(recv_ptr[peer], recv_bytes[peer], kc::dtype::u8, peer, o); };
    if (rank < peer) {
      out();
      in();
    } else {
      in();
      out();
    }
  }
}

}  // namespace

// A work object: completed by the worker thread, with a c10 Future for DDP's comm hooks.
class process_group::work final : public c10d::Work {
 public:
  work(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
      : c10d::Work(rank, type),
        outputs_(std::move(outputs)),
        future_(c10::make_intrusive<c10::ivalue::Future>(
            c10::ListType::create(c10::TensorType::get()))) {}

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  void complete(std::exception_ptr error) {
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(outputs_));
    }
    finish(error);
  }

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

process_group::process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                             ms timeout)
    : c10d::ProcessGroup(rank, size), timeout_(timeout) {
  kc::options o;
  o.timeout = timeout;
  o = kc::options::from_env(o);  // KEEL_COMM_TIMEOUT, _ALGO, _TRANSPORT, _CHUNK win
  timeout_ = o.timeout;
  o.name = "keel/torch";
  c10d_store rendezvous(store);
  comm_ = std::make_unique<kc::communicator>(rendezvous, rank, size, o);
  worker_ = std::thread([this] { loop(); });
  init();
}

process_group::~process_group() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  ready_.notify_all();
  if (worker_.joinable()) worker_.join();
  comm_.reset();
}

std::string process_group::where(const char* op) const {
  return "keel backend rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " + op +
         ": ";
}

std::size_t process_group::pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

c10::intrusive_ptr<c10d::Work> process_group::enqueue(c10d::OpType type, const char* name,
                                                      std::vector<at::Tensor> outputs, task run) {
  auto w = c10::make_intrusive<work>(rank_, type, std::move(outputs));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) throw keel::invalid_argument(where(name) + "the process group is being destroyed");
    queue_.emplace_back(w, std::move(run));
  }
  ++issued_;
  ready_.notify_one();
  return w;
}

void process_group::loop() {
  for (;;) {
    std::pair<c10::intrusive_ptr<work>, task> item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    try {
      item.second(*comm_);
    } catch (...) {
      error = std::current_exception();
    }
    item.first->complete(error);
  }
}

c10::intrusive_ptr<c10d::Work> process_group::broadcast(std::vector<at::Tensor>& tensors,
                                                        const c10d::BroadcastOptions& opts) {
  const std::string w = where("broadcast");
  const at::Tensor t = single(tensors, w);
  const int root = static_cast<int>(opts.rootRank);
  if (root < 0 || root >= size_ || opts.rootTensor != 0) {
    throw keel::invalid_argument(w + "root " + std::to_string(root) + " (tensor " +
                                 std::to_string(opts.rootTensor) + ") is not a rank of " +
                                 std::to_string(size_));
  }
  const auto o = call(opts.timeout);
  return enqueue(c10d::OpType::BROADCAST, "broadcast", {t}, [t, root, o](kc::communicator& c) {
    c.broadcast(t.data_ptr(), t.data_ptr(), nbytes(t), kc::dtype::u8, root, o);
  });
}

c10::intrusive_ptr<c10d::Work> process_group::allreduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::AllreduceOptions& opts) {
  const std::string w = where("all_reduce");
  const at::Tensor t = single(tensors, w);
  const kc::dtype d = reduce_dtype(t, w);
  const kc::reduce_op op = op_of(opts.reduceOp, w);
  const auto o = call(opts.timeout);
  return enqueue(c10d::OpType::ALLREDUCE, "all_reduce", {t}, [t, d, op, o](kc::communicator& c) {
    c.allreduce(t.data_ptr(), t.data_ptr(), static_cast<std::size_t>(t.numel()), d, op, o);
  });
}

c10::intrusive_ptr<c10d::Work> process_group::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const std::string w = where("all_reduce_coalesced");
  if (tensors.empty()) throw keel::invalid_argument(w + "no tensors");
  check_tensors(tensors, w);
  const kc::dtype d = reduce_dtype(tensors[0], w);
  for (const auto& t : tensors) {
    if (t.scalar_type() != tensors[0].scalar_type()) {
      throw keel::invalid_argument(w + "tensors of different dtypes");
    }
  }
  const kc::reduce_op op = op_of(opts.reduceOp, w);
  const auto o = call(opts.timeout);
  std::vector<at::Tensor> ts = tensors;
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, "all_reduce_coalesced", ts,
                 [ts, d, op, o](kc::communicator& c) {
                   std::vector<at::Tensor> flat;
                   for (const auto& t : ts) flat.push_back(t.reshape({-1}));
                   at::Tensor all = at::cat(flat);
                   c.allreduce(all.data_ptr(), all.data_ptr(),
                               static_cast<std::size_t>(all.numel()), d, op, o);
                   std::int64_t at = 0;
                   for (const auto& t : ts) {
                     t.copy_(all.narrow(0, at, t.numel()).view_as(t));
                     at += t.numel();
                   }
                 });
}

c10::intrusive_ptr<c10d::Work> process_group::reduce(std::vector<at::Tensor>& tensors,
                                                     const c10d::ReduceOptions& opts) {
  const std::string w = where("reduce");
  const at::Tensor t = single(tensors, w);
  const kc::dtype d = reduce_dtype(t, w);
  const kc::reduce_op op = op_of(opts.reduceOp, w);
  const int root = static_cast<int>(opts.rootRank);
  if (root < 0 || root >= size_ || opts.rootTensor != 0) {
    throw keel::invalid_argument(w + "root " + std::to_string(root) + " is not a rank of " +
                                 std::to_string(size_));
  }
  const bool is_root = root == rank_;
  const auto o = call(opts.timeout);
  return enqueue(c10d::OpType::REDUCE, "reduce", {t},
                 [t, d, op, root, is_root, o](kc::communicator& c) {
                   c.reduce(t.data_ptr(), is_root ? t.data_ptr() : nullptr,
                            static_cast<std::size_t>(t.numel()), d, op, root, o);
                 });
}

c10::intrusive_ptr<c10d::Work> process_group::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const std::string w = where("all_gather");
  const at::Tensor in = single(inputs, w);
  if (outputs.size() != 1 || outputs[0].size() != static_cast<std::size_t>(size_)) {
    throw keel::invalid_argument(w + "expected one list of " + std::to_string(size_) +
                                 " output tensors");
  }
  std::vector<at::Tensor> outs = outputs[0];
  check_tensors(outs, w);
  for (const auto& t : outs) same_shape(t, in, w, "an output differs from the input");
  const auto o = call(opts.timeout);
  const int n = size_;
  return enqueue(c10d::OpType::ALLGATHER, "all_gather", outs,
                 [in, outs, n, o](kc::communicator& c) {
                   const std::size_t b = nbytes(in);
                   at::Tensor flat =
                       at::empty({static_cast<std::int64_t>(b) * n}, in.options().dtype(at::kByte));
                   c.allgather(in.data_ptr(), flat.data_ptr(), b, kc::dtype::u8, o);
                   for (int r = 0; r < n; ++r) {
                     if (b > 0) std::memcpy(outs[r].data_ptr(), bytes_of(flat) + r * b, b);
                   }
                 });
}

c10::intrusive_ptr<c10d::Work> process_group::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                              const c10d::AllgatherOptions& opts) {
  const std::string w = where("_allgather_base");
  check_tensor(output, w);
  check_tensor(input, w);
  if (output.scalar_type() != input.scalar_type() || output.numel() != input.numel() * size_) {
    throw keel::invalid_argument(w + "the output must hold world_size times the input's elements");
  }
  const at::Tensor in = input, out = output;
  const auto o = call(opts.timeout);
  return enqueue(c10d::OpType::_ALLGATHER_BASE, "_allgather_base", {out},
                 [in, out, o](kc::communicator& c) {
                   c.allgather(in.data_ptr(), out.data_ptr(), nbytes(in), kc::dtype::u8, o);
                 });
}

c10::intrusive_ptr<c10d::Work> process_group::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::GatherOptions& opts) {
  const std::string w = where("gather");
  const at::Tensor in = single(inputs, w);
  const int root = static_cast<int>(opts.rootRank);
  if (root < 0 || root >= size_) {
    throw keel::invalid_argument(w + "root " + std::to_string(root) + " is not a rank of " +
                                 std::to_string(size_));
  }
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    if (outputs.size() != 1 || outputs[0].size() != static_cast<std::size_t>(size_)) {
      throw keel::invalid_argument(w + "the root needs one list of " + std::to_string(size_) +
                                   " output tensors");
    }
    outs = outputs[0];
    check_tensors(outs, w);
    for (const auto& t : outs) same_shape(t, in, w, "an output differs from the input");
  } else if (!outputs.empty() && !outputs[0].empty()) {
    throw keel::invalid_argument(w + "only the root takes output tensors");
  }
  const int rank = rank_, n = size_;
  const auto o = call(opts.timeout);
  return enqueue(c10d::OpType::GATHER, "gather", outs,
                 [in, outs, root, rank, n, o](kc::communicator& c) {
                   const std::size_t b = nbytes(in);
                   if (rank != root) {
                     c.send(in.data_ptr(), b, kc::dtype::u8, root, o);
                     return;
                   }
                   for (int r = 0; r < n; ++r) {
                     if (r == rank) {
                       if (b > 0) std::memcpy(outs[r].data_ptr(), in.data_ptr(), b);
                     } else {
                       c.recv(outs[r].data_ptr(), b, kc::dtype::u8, r, o);
                     }
                   }
                 });
}

c10::intrusive_ptr<c10d::Work> process_group::scatter(std::vector<at::Tensor>& outputs,
                                                      std::vector<std::vector<at::Tensor>>& inputs,
                                                      const c10d::ScatterOptions& opts) {
  const std::string w = where("scatter");
  const at::Tensor out = single(outputs, w);
  const int root = static_cast<int>(opts.rootRank);
  if (root < 0 || root >= size_) {
    throw keel::invalid_argument(w + "root " + std::to_string(root) + " is not a rank of " +
                                 std::to_string(size_));
  }
  std::vector<at::Tensor> ins;
  if (rank_ == root) {
    if (inputs.size() != 1 || inputs[0].size() != static_cast<std::size_t>(size_)) {
      throw keel::invalid_argument(w + "the root needs one list of " + std::to_string(size_) +
                                   " input tensors");
    }
    ins = inputs[0];
    check_tensors(ins, w);
    for (const auto& t : ins) same_shape(t, out, w, "an input differs from the output");
  } else if (!inputs.empty() && !inputs[0].empty()) {
    throw keel::invalid_argument(w + "only the root takes input tensors");
  }
  const int rank = rank_, n = size_;
  const auto o = call(opts.timeout);
  return enqueue(c10d::OpType::SCATTER, "scatter", {out},
                 [out, ins, root, rank, n, o](kc::communicator& c) {
                   const std::size_t b = nbytes(out);
                   if (rank != root) {
                     c.recv(out.data_ptr(), b, kc::dtype::u8, root, o);
                     return;
                   }
                   for (int r = 0; r < n; ++r) {
                     if (r == rank) {
                       if (b > 0) std::memcpy(out.data_ptr(), ins[r].data_ptr(), b);
                     } else {
                       c.send(ins[r].data_ptr(), b, kc::dtype::u8, r, o);
                     }
                   }
                 });
}

c10::intrusive_ptr<c10d::Work> process_group::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const std::string w = where("reduce_scatter");
  const at::Tensor out = single(outputs, w);
  const kc::dtype d = reduce_dtype(out, w);
  if (inputs.size() != 1 || inputs[0].size() != static_cast<std::size_t>(size_)) {
    throw keel::invalid_argument(w + "expected one list of " + std::to_string(size_) +
                                 " input tensors");
  }
  std::vector<at::Tensor> ins = inputs[0];
  check_tensors(ins, w);
  for (const auto& t : ins) same_shape(t, out, w, "an input differs from the output");
  const kc::reduce_op op = op_of(opts.reduceOp, w);
  const auto o = call(opts.timeout);
  return enqueue(c10d::OpType::REDUCE_SCATTER, "reduce_scatter", {out},
                 [out, ins, d, op, o](kc::communicator& c) {
                   std::vector<at::Tensor> flat;
                   for (const auto& t : ins) flat.push_back(t.reshape({-1}));
                   const at::Tensor all = at::cat(flat);
                   c.reduce_scatter(all.data_ptr(), out.data_ptr(),
                                    static_cast<std::size_t>(out.numel()), d, op, o);
                 });
}

c10::intrusive_ptr<c10d::Work> process_group::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const std::string w = where("_reduce_scatter_base");
  check_tensor(output, w);
  check_tensor(input, w);
  const kc::dtype d = reduce_dtype(output, w);
  if (output.scalar_type() != input.scalar_type() || input.numel() != output.numel() * size_) {
    throw keel::invalid_argument(w + "the input must hold world_size times the output's elements");
  }
  const kc::reduce_op op = op_of(opts.reduceOp, w);
  const at::Tensor in = input, out = output;
  const auto o = call(opts.timeout);
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, "_reduce_scatter_base", {out},
                 [in, out, d, op, o](kc::communicator& c) {
                   c.reduce_scatter(in.data_ptr(), out.data_ptr(),
                                    static_cast<std::size_t>(out.numel()), d, op, o);
                 });
}

c10::intrusive_ptr<c10d::Work> process_group::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                            std::vector<int64_t>& output_splits,
                                                            std::vector<int64_t>& input_splits,
                                                            const c10d::AllToAllOptions& opts) {
  const std::string w = where("all_to_all_single");
  check_tensor(output, w);
  check_tensor(input, w);
  if (output.scalar_type() != input.scalar_type()) {
    throw keel::invalid_argument(w + "input and output differ in dtype");
  }
  const at::Tensor in = input, out = output;
  const auto o = call(opts.timeout);
  const int n = size_, rank = rank_;
  if (output_splits.empty() && input_splits.empty()) {
    if (in.numel() != out.numel() || in.numel() % n != 0) {
      throw keel::invalid_argument(w +
                                   "input and output need the same number of elements, "
                                   "divisible by the world size");
    }
    return enqueue(c10d::OpType::ALLTOALL_BASE, "all_to_all_single", {out},
                   [in, out, n, o](kc::communicator& c) {
                     c.alltoall(in.data_ptr(), out.data_ptr(), nbytes(in) / n, kc::dtype::u8, o);
                   });
  }
  // Splits count rows of dimension 0; empty: equal parts.
  auto plan = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* which) {
    const std::int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const std::size_t row_bytes = rows == 0 ? 0 : nbytes(t) / static_cast<std::size_t>(rows);
    std::vector<std::size_t> b(n);
    if (splits.empty()) {
      if (rows % n != 0) {
        throw keel::invalid_argument(w + which + ": " + std::to_string(rows) +
                                     " rows do not split into " + std::to_string(n) + " parts");
      }
      std::fill(b.begin(), b.end(), row_bytes * static_cast<std::size_t>(rows / n));
    } else {
      if (splits.size() != static_cast<std::size_t>(n)) {
        throw keel::invalid_argument(w + which + " splits: " + std::to_string(splits.size()) +
                                     " entries for " + std::to_string(n) + " ranks");
      }
      std::int64_t sum = 0;
      for (int p = 0; p < n; ++p) {
        if (splits[p] < 0) throw keel::invalid_argument(w + which + " splits: a negative split");
        sum += splits[p];
        b[p] = row_bytes * static_cast<std::size_t>(splits[p]);
      }
      if (sum != rows) {
        throw keel::invalid_argument(w + which + " splits add up to " + std::to_string(sum) +
                                     ", the tensor has " + std::to_string(rows) + " rows");
      }
    }
    return b;
  };
  const std::vector<std::size_t> send_bytes = plan(in, input_splits, "input");
  const std::vector<std::size_t> recv_bytes = plan(out, output_splits, "output");
  return enqueue(c10d::OpType::ALLTOALL_BASE, "all_to_all_single", {out},
                 [in, out, send_bytes, recv_bytes, rank, n, o](kc::communicator& c) {
                   std::vector<std::uint8_t*> sp(n), rp(n);
                   std::size_t s = 0, r = 0;
                   for (int p = 0; p < n; ++p) {
                     sp[p] = bytes_of(in) + s;
                     rp[p] = bytes_of(out) + r;
                     s += send_bytes[p];
                     r += recv_bytes[p];
                   }
                   pairwise(c, rank, n, sp, send_bytes, rp, recv_bytes, o);
                 });
}

c10::intrusive_ptr<c10d::Work> process_group::alltoall(std::vector<at::Tensor>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllToAllOptions& opts) {
  const std::string w = where("all_to_all");
  if (outputs.size() != static_cast<std::size_t>(size_) ||
      inputs.size() != static_cast<std::size_t>(size_)) {
    throw keel::invalid_argument(w + "expected " + std::to_string(size_) +
                                 " input and output tensors");
  }
  check_tensors(outputs, w);
  check_tensors(inputs, w);
  bool equal = true;
  for (int p = 0; p < size_; ++p) {
    if (inputs[p].scalar_type() != inputs[0].scalar_type() ||
        outputs[p].scalar_type() != inputs[0].scalar_type()) {
      throw keel::invalid_argument(w + "tensors of different dtypes");
    }
    equal =
        equal && nbytes(inputs[p]) == nbytes(inputs[0]) && nbytes(outputs[p]) == nbytes(inputs[0]);
  }
  const std::vector<at::Tensor> ins = inputs, outs = outputs;
  const int n = size_, rank = rank_;
  const auto o = call(opts.timeout);
  return enqueue(c10d::OpType::ALLTOALL, "all_to_all", outs,
                 [ins, outs, equal, rank, n, o](kc::communicator& c) {
                   if (equal) {
                     const std::size_t b = nbytes(ins[0]);
                     const auto len = static_cast<std::int64_t>(b) * n;
                     at::Tensor send = at::empty({len}, ins[0].options().dtype(at::kByte));
                     at::Tensor recv = at::empty({len}, ins[0].options().dtype(at::kByte));
                     for (int p = 0; p < n; ++p) {
                       if (b > 0) std::memcpy(bytes_of(send) + p * b, ins[p].data_ptr(), b);
                     }
                     c.alltoall(send.data_ptr(), recv.data_ptr(), b, kc::dtype::u8, o);
                     for (int p = 0; p < n; ++p) {
                       if (b > 0) std::memcpy(outs[p].data_ptr(), bytes_of(recv) + p * b, b);
                     }
                     return;
                   }
                   std::vector<std::uint8_t*> sp(n), rp(n);
                   std::vector<std::size_t> sb(n), rb(n);
                   for (int p = 0; p < n; ++p) {
                     sp[p] = bytes_of(ins[p]);
                     rp[p] = bytes_of(outs[p]);
                     sb[p] = nbytes(ins[p]);
                     rb[p] = nbytes(outs[p]);
                   }
                   pairwise(c, rank, n, sp, sb, rp, rb, o);
                 });
}

c10::intrusive_ptr<c10d::Work> process_group::send(std::vector<at::Tensor>& tensors, int dst,
                                                   int /*tag*/) {
  const std::string w = where("send");
  const at::Tensor t = single(tensors, w);
  if (dst < 0 || dst >= size_ || dst == rank_) {
    throw keel::invalid_argument(w + "destination " + std::to_string(dst) +
                                 " is not another rank of " + std::to_string(size_));
  }
  const auto o = call(timeout_);
  return enqueue(c10d::OpType::SEND, "send", {t}, [t, dst, o](kc::communicator& c) {
    c.send(t.data_ptr(), nbytes(t), kc::dtype::u8, dst, o);
  });
}

c10::intrusive_ptr<c10d::Work> process_group::recv(std::vector<at::Tensor>& tensors, int src,
                                                   int /*tag*/) {
  const std::string w = where("recv");
  const at::Tensor t = single(tensors, w);
  if (src < 0 || src >= size_ || src == rank_) {
    throw keel::invalid_argument(w + "source " + std::to_string(src) + " is not another rank of " +
                                 std::to_string(size_));
  }
  const auto o = call(timeout_);
  return enqueue(c10d::OpType::RECV, "recv", {t}, [t, src, o](kc::communicator& c) {
    c.recv(t.data_ptr(), nbytes(t), kc::dtype::u8, src, o);
  });
}

c10::intrusive_ptr<c10d::Work> process_group::recvAnysource(std::vector<at::Tensor>&, int) {
  throw keel::invalid_argument(where("recv") +
                               "receiving from any source is not supported: name the source rank");
}

c10::intrusive_ptr<c10d::Work> process_group::barrier(const c10d::BarrierOptions& opts) {
  const auto o = call(opts.timeout);
  return enqueue(c10d::OpType::BARRIER, "barrier", {}, [o](kc::communicator& c) { c.barrier(o); });
}

}  // namespace keel::torch_backend

namespace {

namespace py = pybind11;
namespace kc = keel::comm;

PyObject* keel_class(const char* name) {
  // Owned for the life of the interpreter (never released: translators run until exit).
  static PyObject* module = py::module_::import("keel._keel").release().ptr();
  PyObject* type = PyObject_GetAttrString(module, name);
  if (type == nullptr) throw py::error_already_set();
  Py_DECREF(type);  // the module keeps it alive
  return type;
}

void raise_comm(const char* name, const kc::comm_error& e) {
  PyObject* type = keel_class(name);
  PyObject* value = PyObject_CallFunction(type, "s", e.what());
  if (value == nullptr) return;  // the call's own error stands
  PyObject_SetAttrString(value, "collective", py::str(e.collective()).ptr());
  PyObject_SetAttrString(value, "seq", py::int_(e.seq()).ptr());
  PyObject_SetAttrString(value, "rank", py::int_(e.rank()).ptr());
  PyErr_SetObject(type, value);
  Py_DECREF(value);
}

}  // namespace

PYBIND11_MODULE(_keel_torch, m) {
  namespace kt = keel::torch_backend;
  m.doc() = "The keel torch.distributed backend (import keel.torch to register it).";
  py::module_::import("torch.distributed");  // torch's ProcessGroup and Store classes
  py::class_<kt::process_group, c10d::ProcessGroup, c10::intrusive_ptr<kt::process_group>>(
      m, "ProcessGroupKeel",
      "A c10d ProcessGroup over keel::comm: what dist.init_process_group('keel') makes.")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::duration<float> timeout) {
             return c10::make_intrusive<kt::process_group>(
                 store, rank, size, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>(),
           "Collective: rendezvous through the c10d store, connect every rank.")
      .def_property_readonly("timeout", &kt::process_group::timeout)
      .def_property_readonly("issued", &kt::process_group::issued, "Operations issued so far.")
      .def_property_readonly("pending", &kt::process_group::pending,
                             "Operations queued and not finished.");
  // keel's errors out of Work.wait() and the calls: registered after torch's translators (this
  // module imports torch first), so they are tried first.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kc::timeout_error& e) {
      raise_comm("CommTimeoutError", e);
    } catch (const kc::peer_error& e) {
      raise_comm("PeerError", e);
    } catch (const kc::comm_error& e) {
      raise_comm("CommError", e);
    } catch (const keel::invalid_argument& e) {
      PyErr_SetString(keel_class("InvalidArgument"), e.what());
    }
  });
}
