// The progress engine: the driver loop, its idle policy, calls in flight and failures.
#include "progress.hpp"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "keel/comm/error.hpp"
#include "reduce.hpp"

namespace keel::comm::detail {
namespace {

std::string describe(collective c, std::uint64_t seq, std::uint64_t count, dtype t, reduce_op r,
                     algorithm a, std::uint32_t tag) {
  const bool reduces =
      c == collective::allreduce || c == collective::reduce || c == collective::reduce_scatter;
  return fmt::format("{} #{} ({} x {}{}, {}{})", to_string(c), seq, count, to_string(t),
                     reduces ? fmt::format(", {}", to_string(r)) : std::string(), to_string(a),
                     tag != 0 ? fmt::format(", tag {}", tag) : std::string());
}

std::string describe(const call_info& call) {
  return describe(call.coll, call.seq, call.count, call.type, call.op, call.algo, call.tag);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

bool gate_ok(const schedule& s, const op& o) {
  for (int g : s.gates_of(o)) {
    if (!s.ops[g].complete()) return false;
  }
  return true;
}

// Bytes `o` may process from its current position.
std::size_t allowed(const schedule& s, const op& o) {
  std::size_t limit = std::numeric_limits<std::size_t>::max();
  for (int g : s.gates_of(o)) {
    const op& gate = s.ops[g];
    if (gate.complete()) continue;
    if (gate.bytes == 0) return 0;
    const std::ptrdiff_t d = (gate.gate_ptr() + gate.done) - (o.wait_ptr() + o.done);
    if (d <= 0) return 0;
    limit = std::min(limit, static_cast<std::size_t>(d));
  }
  return limit;
}

chunk_header header_for(const call_info& call, const op& o, std::size_t n) {
  chunk_header h;
  h.coll = static_cast<std::uint8_t>(call.coll);
  h.dtype = static_cast<std::uint8_t>(call.type);
  h.op = static_cast<std::uint8_t>(call.op);
  h.algo = static_cast<std::uint8_t>(call.algo);
  h.seq = call.seq;
  h.count = call.count;
  h.offset = o.done;
  h.nbytes = static_cast<std::uint32_t>(n);
  h.index = o.index;
  h.tag = call.tag;
  h.message_bytes = o.bytes;
  return h;
}

}  // namespace

progress::progress(links l, abort_fn on_abort)
    : links_(std::move(l)),
      on_abort_(std::move(on_abort)),
      waiter_(links_.devices),
      staged_(links_.device_of.size() * k_channels) {
  slots_[0] = std::make_unique<call_state>();
  slot0_ = slots_[0].get();
}

progress::~progress() = default;

void progress::run(schedule& s, const call_info& call) {
  std::unique_lock lock(mutex_);
  if (!failed_.empty()) {
    throw peer_error(fmt::format("{} on rank {}: the communicator was aborted by an earlier "
                                 "error: {}",
                                 describe(call), links_.rank, failed_),
                     std::string(to_string(call.coll)), call.seq, -1);
  }
  call_state* slot = slot0_;
  if (call.tag != 0) {
    std::unique_ptr<call_state>& owned = slots_[call.tag];
    if (!owned) owned = std::make_unique<call_state>();
    slot = owned.get();
  }
  call_state& me = *slot;
  prepare(me, s, call);
  active_.push_back(&me);
  if (driving_) {  // another thread drives: it takes this call along
    // Seq_cst, and before the wake: a driver that armed its wait before this store sees the
    // wake, one that arms after it sees pending_ in its last check (below).
    pending_.store(true);
    for (device* d : links_.devices) d->wake();
    changed_.wait(lock, [&] { return me.done || !driving_; });
    if (me.done) {
      if (me.error) std::rethrow_exception(me.error);
      return;
    }
  }
  driving_ = true;
  calls_ = active_;
  pending_.store(false, std::memory_order_relaxed);
  lock.unlock();
  drive(me);
  if (me.error) std::rethrow_exception(me.error);
}

void progress::prepare(call_state& c, schedule& s, const call_info& call) {
  c.s = &s;
  c.call = call;
  c.id = (static_cast<std::uint64_t>(call.coll) << 56) ^
         (static_cast<std::uint64_t>(call.tag) << 40) ^ call.seq;
  c.elem = dtype_size(call.type);
  c.queues.clear();
  c.uses = 0;
  c.finished = false;
  c.done = false;
  c.error = nullptr;
  c.deadline = call.deadline;
  c.last_health = steady::time_point{};
  for (std::size_t q = 0; q < s.queues.size(); ++q) {
    if (s.queues[q].empty()) continue;
    const int peer = static_cast<int>(q / 2 / k_channels);
    const int channel = static_cast<int>(q / 2 % k_channels);
    const int dev = links_.device_of[static_cast<std::size_t>(peer)];
    device* d = links_.devices[static_cast<std::size_t>(dev)];
    queue_state st;
    st.ops = &s.queues[q];
    st.p = d->pair_to(peer, channel);
    st.peer = peer;
    st.is_recv = (q & 1) != 0;
    st.flushes = d->kind() == transport::tcp;
    st.dev = static_cast<std::uint8_t>(dev);
    st.rx = static_cast<std::uint32_t>(q / 2);
    c.queues.push_back(st);
    c.uses |= 1u << dev;
  }
}

void progress::drive(call_state& me) {
  try {
    steady::time_point idle_since{};
    steady::time_point last_read{};  // the previous clock read of this spin
    bool idle = false;
    const auto spin = std::chrono::microseconds(policy.spin_us);
    const auto yield = std::chrono::microseconds(policy.yield_us);
    unsigned polls = 0;     // idle polls since the clock was last read
    bool spinning = false;  // idle, and still within the busy-poll period
    while (true) {
      if (pending_.load()) adopt();
      bool moved = false;
      for (std::size_t i = 0; i < calls_.size();) {
        call_state& c = *calls_[i];
        stepping_ = &c;
        moved |= step(c);
        if (c.finished && &c != &me) {
          retire(c);  // removes it from calls_
          continue;
        }
        ++i;
      }
      if (me.finished) break;
      if (moved) {
        idle = false;
        continue;
      }
      // Several calls in flight and none moves: whatever has arrived may be behind a chunk
      // of an operation that waits; set it all aside so that no ring stays full.
      if (calls_.size() > 1) {
        bool staged = false;
        for (call_state* c : calls_) staged |= stage_all(*c);
        if (staged) {
          idle = false;
          continue;
        }
      }
      // Busy-polling reads the clock only every 64th time (a clock read costs as much as a
      // poll or more): the wake-up latency is the poll's, not the clock's.
      if (!idle) {  // a new idle period: the clock is first read 64 polls into it
        idle = true;
        idle_since = steady::time_point{};
        last_read = steady::time_point{};
        polls = 0;
        spinning = spin.count() > 0;
      }
      if (spinning && (++polls & 63) != 0) {
        cpu_relax();
        continue;
      }
      const auto now = steady::now();
      if (idle_since == steady::time_point{}) idle_since = now;
      // A call's clock starts when it first has to wait, unless it was given a deadline.
      steady::time_point deadline = steady::time_point::max();
      for (call_state* c : calls_) {
        if (c->last_health == steady::time_point{}) c->last_health = now;
        if (c->deadline == steady::time_point{}) c->deadline = now + c->call.timeout;
        deadline = std::min(deadline, c->deadline);
      }
      // Spinning reads the clock every few microseconds; a longer gap means the kernel ran
      // someone else on this CPU meanwhile. Then the CPU is shared, and a spinning rank only
      // burns the time slice it will need once its peer answers — while a sleeping one is
      // woken by the peer's doorbell and, having slept, preempts whoever runs. So after a
      // preemption the rank spins only briefly before it sleeps, for a while.
      if (spinning && last_read != steady::time_point{} && now - last_read > k_preempted) {
        contended_until_ = now + k_contended_for;
      }
      last_read = now;
      spinning =
          now - idle_since < (now < contended_until_ ? std::min(spin, k_contended_spin) : spin);
      if (spinning) {
        // Idle for over a millisecond: the peer is likely not running at all. If it shares
        // this CPU (unbound ranks on a busy machine), spinning through our time slice would
        // only delay it, so let the scheduler run someone else now and then.
        if (policy.spin_yields && now - idle_since > std::chrono::milliseconds(1)) ::sched_yield();
        cpu_relax();
        continue;
      }
      // Then stay runnable but let others run (a peer about to answer, another job) before
      // paying a futex sleep and wake-up: small-message latency under load depends on it.
      if (now - idle_since < yield && now < deadline) {
        ::sched_yield();
        continue;
      }
      for (call_state* c : calls_) {
        if (now < c->deadline) continue;
        const queue_state* blame = nullptr;
        for (const auto& q : c->queues) {
          if (q.head < q.ops->size() && (blame == nullptr || (q.is_recv && !blame->is_recv))) {
            blame = &q;
          }
        }
        const op& o = c->s->ops[(*blame->ops)[blame->head]];
        const int missing = links_.devices[blame->dev]->root_of_stall(c->id, blame->peer);
        stepping_ = c;
        throw failure{
            failure::timeout, missing,
            fmt::format("timed out after {} ms waiting for rank {} ({} {}/{} bytes of message "
                        "{}){}",
                        c->call.timeout.count(), blame->peer, blame->is_recv ? "received" : "sent",
                        o.done, o.bytes, o.index,
                        missing != blame->peer
                            ? fmt::format("; rank {} waits in turn, rank {} never joined",
                                          blame->peer, missing)
                            : std::string())};
      }
      // Before sleeping: are the peers we wait for still there?
      bool recovered = false;
      idle_checks(now, recovered);
      if (recovered) {
        idle = false;
        continue;
      }
      const int left_ms = std::max<int>(
          1, static_cast<int>(
                 std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) +
                 1);
      {  // tell the peers whom we wait for (in the oldest call in flight)
        const call_state& c = *calls_.front();
        int waiting_for = -1;
        for (const auto& q : c.queues) {
          if (q.head < q.ops->size() && (waiting_for < 0 || q.is_recv)) {
            waiting_for = q.peer;
            if (q.is_recv) break;
          }
        }
        for (device* d : links_.devices) d->set_waiting(c.id, waiting_for);
      }
      std::uint32_t uses = 0;
      for (const call_state* c : calls_) uses |= c->uses;
      const bool again = waiter_.wait(uses, std::min(left_ms, 50), [&] {
        if (pending_.load()) return true;  // a new call: adopt it rather than sleep
        bool any = false;
        for (call_state* c : calls_) {
          stepping_ = c;
          any |= step(*c);
        }
        return any;
      });
      if (again) idle = false;
    }
  } catch (const failure& f) {
    fail(f, *stepping_);
  } catch (const peer_gone& e) {
    fail(failure{failure::peer, e.rank, e.what()}, *stepping_);
  }
  for (device* d : links_.devices) d->set_waiting(0, -1);
  calls_.clear();
  std::lock_guard lock(mutex_);
  driving_ = false;
  if (const auto it = std::find(active_.begin(), active_.end(), &me); it != active_.end()) {
    active_.erase(it);
  }
  me.done = true;
  if (!active_.empty()) changed_.notify_all();  // one of them drives now
}

void progress::idle_checks(steady::time_point now, bool& recovered) {
  for (call_state* c : calls_) {
    if (now - c->last_health < std::chrono::milliseconds(20)) continue;
    c->last_health = now;
    for (const auto& q : c->queues) {
      if (q.head >= q.ops->size()) continue;
      const peer_health h = links_.devices[q.dev]->health(q.peer);
      if (h.ok) continue;
      stepping_ = c;
      if (step(*c)) {  // data it left behind is still usable
        recovered = true;
        return;
      }
      if (h.aborted) {
        throw failure{failure::peer, h.culprit,
                      fmt::format("rank {} aborted: {}", q.peer, h.reason)};
      }
      throw failure{failure::peer, q.peer,
                    h.dead ? fmt::format("rank {} died (its process is gone)", q.peer)
                           : fmt::format("rank {} closed its communicator", q.peer)};
    }
  }
}

void progress::adopt() {
  std::lock_guard lock(mutex_);
  calls_ = active_;
  pending_.store(false, std::memory_order_relaxed);
}

void progress::retire(call_state& c) {
  calls_.erase(std::find(calls_.begin(), calls_.end(), &c));
  std::lock_guard lock(mutex_);
  active_.erase(std::find(active_.begin(), active_.end(), &c));
  c.done = true;
  changed_.notify_all();
}

void progress::fail(const failure& f, call_state& c) {
  const std::string message =
      fmt::format("{} on rank {}: {}", describe(c.call), links_.rank, f.message);
  on_abort_(f.rank, message);
  const std::string coll(to_string(c.call.coll));
  std::exception_ptr error;
  switch (f.kind) {
    case failure::timeout:
      error = std::make_exception_ptr(timeout_error(message, coll, c.call.seq, f.rank));
      break;
    case failure::mismatch:
      error = std::make_exception_ptr(mismatch_error(message, coll, c.call.seq, f.rank));
      break;
    case failure::peer:
      error = std::make_exception_ptr(peer_error(message, coll, c.call.seq, f.rank));
      break;
  }
  std::lock_guard lock(mutex_);
  failed_ = message;
  for (call_state* a : active_) {
    if (a == &c) {
      a->error = error;
    } else {
      a->error = std::make_exception_ptr(
          peer_error(fmt::format("{} on rank {}: aborted while in flight: {}", describe(a->call),
                                 links_.rank, message),
                     std::string(to_string(a->call.coll)), a->call.seq, f.rank));
    }
    a->done = true;
  }
  if (std::find(active_.begin(), active_.end(), &c) == active_.end()) c.error = error;
  active_.clear();
  changed_.notify_all();
}

// ------------------------------------------------------------------ stepping one call

bool progress::step(call_state& c) {
  bool moved = false;
  bool finished = true;
  for (auto& q : c.queues) {
    if (q.flushes) moved |= q.p->flush();
    while (q.head < q.ops->size()) {
      op& o = c.s->ops[(*q.ops)[q.head]];
      moved |= q.is_recv ? step_recv(c, q, o) : step_send(c, o, *q.p);
      if (!o.complete()) break;
      ++q.head;
    }
    if (q.head < q.ops->size()) finished = false;
  }
  c.finished = finished;
  return moved;
}

bool progress::step_send(call_state& c, op& o, pair& p) {
  bool moved = false;
  while (!o.complete()) {
    std::size_t n = 0;
    if (o.bytes == 0) {
      if (!gate_ok(*c.s, o)) break;
    } else {
      n = std::min(links_.chunk_bytes, o.bytes - o.done);
      const std::size_t a = allowed(*c.s, o);
      if (a < n) n = a / c.elem * c.elem;
      if (n == 0) break;
    }
    if (!p.try_send(header_for(c.call, o, n), o.src + o.done)) break;
    o.done += n;
    o.started = true;
    moved = true;
  }
  return moved;
}

bool progress::step_recv(call_state& c, queue_state& q, op& o) {
  const call_info& call = c.call;
  auto validate = [&](const chunk_header& h) {
    if (h.flags & k_flag_abort) {
      throw failure{failure::peer, abort_culprit(h),
                    fmt::format("rank {} aborted (it blames rank {})", o.peer, abort_culprit(h))};
    }
    const bool same = h.coll == static_cast<std::uint8_t>(call.coll) && h.seq == call.seq &&
                      h.dtype == static_cast<std::uint8_t>(call.type) &&
                      h.op == static_cast<std::uint8_t>(call.op) &&
                      h.algo == static_cast<std::uint8_t>(call.algo) && h.count == call.count;
    if (!same) {
      throw failure{failure::mismatch, o.peer,
                    fmt::format("rank {} called {} while this rank called {}", o.peer,
                                describe(static_cast<collective>(h.coll), h.seq, h.count,
                                         static_cast<dtype>(h.dtype), static_cast<reduce_op>(h.op),
                                         static_cast<algorithm>(h.algo), h.tag),
                                describe(call))};
    }
    if (h.index != o.index || h.message_bytes != o.bytes || h.offset != o.done - o.chunk_pos) {
      throw failure{failure::mismatch, o.peer,
                    fmt::format("rank {} sent message {} ({} bytes, offset {}) where this "
                                "rank expected message {} ({} bytes, offset {})",
                                o.peer, h.index, h.message_bytes, h.offset, o.index, o.bytes,
                                o.done - o.chunk_pos)};
    }
  };
  bool moved = false;
  while (!o.complete()) {
    if (o.bytes == 0 && !gate_ok(*c.s, o)) break;
    const std::byte* payload = nullptr;
    bool staged = false;
    const chunk_header* h = current(c, q, &payload, staged);
    if (h == nullptr) break;
    validate(*h);
    const std::size_t avail = h->nbytes - o.chunk_pos;
    std::size_t n = avail;
    if (n > o.bytes - o.done) {
      throw failure{failure::mismatch, o.peer,
                    fmt::format("rank {} sent more bytes than this rank expects", o.peer)};
    }
    if (o.bytes > 0) {
      const std::size_t a = allowed(*c.s, o);
      if (a < n) n = a / c.elem * c.elem;
      if (n == 0 && avail > 0) break;
    }
    if (n > 0) {
      if (o.kind == op::recv) {
        std::memcpy(o.dst + o.done, payload + o.chunk_pos, n);
      } else {
        reduce(o.dst + o.done, o.src + o.done, payload + o.chunk_pos, n / c.elem, call.type,
               call.op);
      }
    }
    o.done += n;
    o.chunk_pos += n;
    o.started = true;
    moved = true;
    if (o.chunk_pos == h->nbytes) {
      release(c, q, staged);
      o.chunk_pos = 0;
    }
  }
  return moved;
}

// ------------------------------------------------------------------ chunks of other calls

// The chunk the receive at the head of `q` reads next: the oldest one set aside for its tag,
// else the pair's oldest if it is for its tag (or an abort). Chunks of other tags met on the
// way are set aside for their own calls.
const chunk_header* progress::current(call_state& c, queue_state& q, const std::byte** payload,
                                      bool& staged) {
  if (staged_count_ != 0) {
    for (staged_chunk& sc : staged_[q.rx]) {
      if (sc.h.tag == c.call.tag) {
        *payload = sc.payload.data();
        staged = true;
        return &sc.h;
      }
    }
  }
  while (const chunk_header* h = q.p->peek(payload)) {
    if (h->tag == c.call.tag || (h->flags & k_flag_abort)) {
      staged = false;
      return h;
    }
    stage(q, *h, *payload);
    q.p->release();
  }
  return nullptr;
}

void progress::release(call_state& c, queue_state& q, bool staged) {
  if (!staged) {
    q.p->release();
    return;
  }
  auto& list = staged_[q.rx];
  list.erase(std::find_if(list.begin(), list.end(),
                          [&](const staged_chunk& sc) { return sc.h.tag == c.call.tag; }));
  --staged_count_;
}

void progress::stage(queue_state& q, const chunk_header& h, const std::byte* payload) {
  staged_chunk sc;
  sc.h = h;
  sc.payload.assign(payload, payload + h.nbytes);
  staged_[q.rx].push_back(std::move(sc));
  ++staged_count_;
}

bool progress::stage_all(call_state& c) {
  stepping_ = &c;  // a pair that breaks fails this call
  bool any = false;
  for (queue_state& q : c.queues) {
    if (!q.is_recv || q.head >= q.ops->size()) continue;
    const std::byte* payload = nullptr;
    while (const chunk_header* h = q.p->peek(&payload)) {
      if (h->flags & k_flag_abort) {
        stepping_ = &c;
        throw failure{
            failure::peer, abort_culprit(*h),
            fmt::format("rank {} aborted (it blames rank {})", q.peer, abort_culprit(*h))};
      }
      stage(q, *h, payload);
      q.p->release();
      any = true;
    }
  }
  return any;
}

}  // namespace keel::comm::detail
