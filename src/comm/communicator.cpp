// communicator: algorithm choice and the front door of every collective (the bootstrap is
// in bootstrap.cpp).
#include "keel/comm/communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithm_table.hpp"
#include "comm_impl.hpp"
#include "keel/comm/environment.hpp"
#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/core/log.hpp"
#include "reduce.hpp"

namespace keel::comm {
// ------------------------------------------------------------------ choice

namespace {

struct estimate {
  algorithm algo;
  double seconds;
};

}  // namespace

// The candidates and their costs come from the (collective, algorithm) table.
choice communicator::impl::choose(collective c, std::size_t bytes, algorithm requested) const {
  choice out;
  const detail::algorithm_entry* first = nullptr;
  for (const auto& e : detail::algorithm_table()) {
    if (e.coll == c) {
      first = &e;
      break;
    }
  }
  if (first == nullptr) return out;
  const int n = size_;
  std::string note;
  if (requested == algorithm::auto_select) requested = opts_.algo;
  if (requested != algorithm::auto_select) {
    if (detail::algorithm_applies(c, requested, n)) {
      out.algo = requested;
      out.why = fmt::format("{} requested", to_string(requested));
      return out;
    }
    note = fmt::format(" ({} requested but does not apply to {} on {} ranks)", to_string(requested),
                       to_string(c), n);
  }
  detail::cost_inputs in;
  in.n = n;
  in.alpha = any_tcp_ ? model_.alpha_tcp : model_.alpha_shm;
  in.beta = any_tcp_ ? model_.beta_tcp : model_.beta_shm;
  in.gamma = model_.gamma;
  in.chunk = static_cast<double>(opts_.chunk_bytes);
  std::vector<estimate> est;
  for (const auto& e : detail::algorithm_table()) {
    if (e.coll != c || (e.applies && !e.applies(n))) continue;
    est.push_back({e.algo, e.cost(in, static_cast<double>(bytes))});
  }
  if (est.empty()) {
    out.algo = first->algo;
    out.why = "only choice" + note;
    return out;
  }
  std::stable_sort(est.begin(), est.end(),
                   [](const estimate& l, const estimate& r) { return l.seconds < r.seconds; });
  out.algo = est.front().algo;
  std::string list;
  for (const auto& e : est) {
    list += fmt::format("{}{} {:.1f} us", list.empty() ? "" : " < ", to_string(e.algo),
                        e.seconds * 1e6);
  }
  out.why = fmt::format("model ({}): {}{}", any_tcp_ ? "tcp" : "shm", list, note);
  return out;
}

algorithm communicator::impl::resolve(lane& l, collective c, std::size_t bytes,
                                      algorithm requested) {
  // The choice depends only on (collective, requested, bytes): remember it, so that a training
  // loop's repeated calls cost one hash lookup instead of the model and its explanation.
  const std::uint64_t key =
      (static_cast<std::uint64_t>(c) << 58) ^ (static_cast<std::uint64_t>(requested) << 52) ^ bytes;
  if (bytes < (std::uint64_t{1} << 52)) {
    if (const auto it = l.decided.find(key); it != l.decided.end()) return it->second;
  }
  const choice ch = choose(c, bytes, requested);
  if (log_enabled(log_level::info)) {
    KEEL_LOG_INFO("comm", "rank {}: {} of {} on {} ranks: chose {}: {}", rank_, to_string(c),
                  format_size(bytes), size_, to_string(ch.algo), ch.why);
  }
  if (bytes < (std::uint64_t{1} << 52)) {
    if (l.decided.size() >= 4096) l.decided.clear();  // bounded; every rank decides alike
    l.decided.emplace(key, ch.algo);
  }
  return ch.algo;
}

call_info communicator::impl::begin(lane& l, collective c, dtype t, reduce_op op, std::size_t count,
                                    const call_options& o) {
  if (aborted_.load(std::memory_order_acquire)) {
    std::lock_guard lock(abort_mutex_);
    throw peer_error(fmt::format("{} on rank {}: the communicator was aborted by an earlier "
                                 "error: {}",
                                 to_string(c), rank_, abort_reason_),
                     std::string(to_string(c)), l.seq + 1, abort_culprit_);
  }
  if (std::find(std::begin(k_all_dtypes), std::end(k_all_dtypes), t) == std::end(k_all_dtypes)) {
    throw keel::invalid_argument(
        fmt::format("{}: dtype {} is not a buffer type of keel::comm", to_string(c), name_of(t)));
  }
  call_info call;
  call.coll = c;
  call.type = t;
  call.op = op;
  call.count = count;
  call.tag = o.tag;
  // Point to point has a sequence per peer and direction (set by send/recv).
  if (c != collective::sendrecv) call.seq = ++l.seq;
  call.timeout = o.timeout.count() > 0 ? o.timeout : opts_.timeout;
  // call.deadline stays unset: the engine starts the clock when the call first has to wait
  // (a clock read costs as much as a small message), so the timeout counts from then.
  return call;
}

std::byte* communicator::impl::scratch(lane& l, std::size_t bytes, int which) {
  auto& s = l.scratch[which];
  if (s.size() < bytes) s.resize(bytes);
  return s.data();
}

communicator::impl::claim::claim(impl& m, std::uint32_t tag, collective c) : lane_(m.lane0_) {
  if (tag != 0) {
    std::lock_guard lock(m.lanes_mutex_);
    std::unique_ptr<comm::lane>& l = m.lanes_[tag];
    if (!l) {
      l = std::make_unique<comm::lane>();
      l->p2p_send_seq.assign(static_cast<std::size_t>(m.size_), 0);
      l->p2p_recv_seq.assign(static_cast<std::size_t>(m.size_), 0);
    }
    lane_ = l.get();
  }
  // Acquire/release: the next call on this lane sees what this one left in it.
  if (lane_->busy.exchange(true, std::memory_order_acquire)) {
    throw keel::invalid_argument(
        fmt::format("{} on rank {}: tag {} is in use by another call in flight (calls at once need "
                    "different tags)",
                    to_string(c), m.rank_, tag));
  }
}

communicator::impl::claim::~claim() { lane_->busy.store(false, std::memory_order_release); }

// ------------------------------------------------------------------ communicator

communicator::communicator(store& rendezvous, int rank, int size, options opts)
    : impl_(std::make_unique<impl>(rendezvous, rank, size, std::move(opts))) {}

communicator::~communicator() = default;

std::unique_ptr<communicator> communicator::from_env(options opts) {
  opts = options::from_env(opts);
  const launch_env e = detect_launch_env();
  auto st = make_store(e, opts.timeout);
  auto c = std::make_unique<communicator>(*st, e.rank, e.size, opts);
  // Every rank is past the store now (the constructor ends with a barrier): nobody needs to
  // connect to it any more, so rank 0 stops listening unless the job asked to keep it.
  if (!e.store_keep) st->stop_listening();
  c->owned_store_ = std::move(st);
  return c;
}

int communicator::rank() const noexcept { return impl_->rank_; }
int communicator::size() const noexcept { return impl_->size_; }
std::uint64_t communicator::seq() const noexcept { return impl_->lane0_->seq; }
const cost_model& communicator::model() const noexcept { return impl_->model_; }

transport communicator::transport_to(int peer) const {
  if (peer < 0 || peer >= impl_->size_) {
    throw keel::invalid_argument(fmt::format("peer {} is not a rank of {}", peer, impl_->size_));
  }
  return impl_->transport_of_[peer];
}

choice communicator::choose(collective c, std::size_t bytes, algorithm requested) const {
  return impl_->choose(c, bytes, requested);
}

namespace {

void check_root(int root, int size, collective c) {
  if (root < 0 || root >= size) {
    throw keel::invalid_argument(
        fmt::format("{}: root {} is not a rank of {}", to_string(c), root, size));
  }
}

void check_buffers(const void* in, const void* out, std::size_t count, collective c) {
  if (count > 0 && (in == nullptr || out == nullptr)) {
    throw keel::invalid_argument(
        fmt::format("{}: null buffer for {} elements", to_string(c), count));
  }
}

}  // namespace

// Runs one collective: choose, build, copy, run, finish avg.
namespace {
void execute(communicator::impl& m, collective c, const void* in, void* out, std::size_t count,
             dtype t, reduce_op op, int root, std::size_t total_bytes, call_options o,
             std::size_t avg_elems, void* avg_buf) {
  const communicator::impl::claim claimed(m, o.tag, c);
  lane& l = claimed.lane();
  call_info call = m.begin(l, c, t, op, count, o);
  call.algo = m.resolve(l, c, total_bytes, o.algo);
  call.root = root;
  if (count == 0 && c != collective::barrier) return;
  const int r = m.rank_;
  int agg = root;
  if (call.algo == algorithm::reducer &&
      (c == collective::allreduce || c == collective::reduce_scatter)) {
    agg = m.opts_.reducer_rank;
  }
  detail::args a{
      r,
      m.size_,
      static_cast<const std::byte*>(in),
      static_cast<std::byte*>(out),
      count,
      dtype_size(t),
      agg,
      [&l](std::size_t bytes, int which) { return communicator::impl::scratch(l, bytes, which); }};
  if (m.size_ == 1) {
    const std::size_t bytes = count * dtype_size(t);
    if (out && in != out && bytes) std::memmove(out, in, bytes);
  } else {
    detail::schedule& s = l.sched;
    s.reset(m.size_);
    const detail::plan p = detail::find_algorithm(c, call.algo)->build(s, a);
    for (const auto& cp : p.before) std::memcpy(cp.dst, cp.src, cp.bytes);
    m.run(s, call);
    for (const auto& cp : p.after) {
      if (cp.dst != cp.src) std::memcpy(cp.dst, cp.src, cp.bytes);
    }
  }
  if (op == reduce_op::avg && avg_buf) detail::finish_avg(avg_buf, avg_elems, t, m.size_);
}
}  // namespace

void communicator::allreduce(const void* in, void* out, std::size_t count, dtype t, reduce_op op,
                             call_options o) {
  check_buffers(in, out, count, collective::allreduce);
  execute(*impl_, collective::allreduce, in, out, count, t, op, -1, count * dtype_size(t), o, count,
          out);
}

void communicator::reduce(const void* in, void* out, std::size_t count, dtype t, reduce_op op,
                          int root, call_options o) {
  check_root(root, size(), collective::reduce);
  check_buffers(in, rank() == root ? out : in, count, collective::reduce);
  execute(*impl_, collective::reduce, in, out, count, t, op, root, count * dtype_size(t), o, count,
          rank() == root ? out : nullptr);
}

void communicator::broadcast(const void* in, void* out, std::size_t count, dtype t, int root,
                             call_options o) {
  check_root(root, size(), collective::broadcast);
  check_buffers(rank() == root ? in : out, out, count, collective::broadcast);
  execute(*impl_, collective::broadcast, in, out, count, t, reduce_op::sum, root,
          count * dtype_size(t), o, 0, nullptr);
}

void communicator::reduce_scatter(const void* in, void* out, std::size_t count, dtype t,
                                  reduce_op op, call_options o) {
  check_buffers(in, out, count, collective::reduce_scatter);
  execute(*impl_, collective::reduce_scatter, in, out, count, t, op, -1,
          count * dtype_size(t) * size(), o, count, out);
}

void communicator::allgather(const void* in, void* out, std::size_t count, dtype t,
                             call_options o) {
  check_buffers(in, out, count, collective::allgather);
  execute(*impl_, collective::allgather, in, out, count, t, reduce_op::sum, -1,
          count * dtype_size(t) * size(), o, 0, nullptr);
}

void communicator::alltoall(const void* in, void* out, std::size_t count, dtype t, call_options o) {
  check_buffers(in, out, count, collective::alltoall);
  execute(*impl_, collective::alltoall, in, out, count, t, reduce_op::sum, -1,
          count * dtype_size(t) * size(), o, 0, nullptr);
}

void communicator::barrier(call_options o) {
  execute(*impl_, collective::barrier, nullptr, nullptr, 0, dtype::u8, reduce_op::sum, -1, 0, o, 0,
          nullptr);
}

namespace {
// send and recv: one transfer with `peer`, ordered by its own sequence per direction.
// A send reads `src`, a receive writes `dst`.
void point_to_point(communicator::impl& m, bool sending, const void* src, void* dst,
                    std::size_t count, dtype t, int peer, call_options o) {
  if (peer < 0 || peer >= m.size_ || peer == m.rank_) {
    throw keel::invalid_argument(fmt::format("{}: peer {} must be another rank of {}",
                                             sending ? "send" : "recv", peer, m.size_));
  }
  const void* buf = sending ? src : dst;
  check_buffers(buf, buf, count, collective::sendrecv);
  const communicator::impl::claim claimed(m, o.tag, collective::sendrecv);
  lane& l = claimed.lane();
  call_info call = m.begin(l, collective::sendrecv, t, reduce_op::sum, count, o);
  auto& seq = sending ? l.p2p_send_seq : l.p2p_recv_seq;
  call.seq = ++seq[static_cast<std::size_t>(peer)];
  call.algo = algorithm::direct;
  detail::schedule& s = l.sched;
  s.reset(m.size_);
  if (sending) {
    s.send(peer, 1, src, count * dtype_size(t));
  } else {
    s.recv(peer, 1, dst, count * dtype_size(t));
  }
  m.run(s, call);
}
}  // namespace

void communicator::send(const void* in, std::size_t count, dtype t, int peer, call_options o) {
  point_to_point(*impl_, true, in, nullptr, count, t, peer, o);
}

void communicator::recv(void* out, std::size_t count, dtype t, int peer, call_options o) {
  point_to_point(*impl_, false, nullptr, out, count, t, peer, o);
}

}  // namespace keel::comm
