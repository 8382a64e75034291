// The progress engine: the loop that runs a schedule, its idle policy and its failures.
#include "progress.hpp"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>

#include "keel/comm/error.hpp"
#include "reduce.hpp"

namespace keel::comm {
namespace {

using detail::chunk_header;
using detail::op;
using steady = std::chrono::steady_clock;

std::string describe(collective c, std::uint64_t seq, std::uint64_t count, dtype t, reduce_op r,
                     algorithm a) {
  const bool reduces =
      c == collective::allreduce || c == collective::reduce || c == collective::reduce_scatter;
  return fmt::format("{} #{} ({} x {}{}, {})", to_string(c), seq, count, to_string(t),
                     reduces ? fmt::format(", {}", to_string(r)) : std::string(), to_string(a));
}

std::string describe(const call_info& call) {
  return describe(call.coll, call.seq, call.count, call.type, call.op, call.algo);
}

// Raised inside the engine, turned into the public errors by impl::fail.
struct engine_error {
  enum kind_t { timeout, peer, mismatch } kind;
  int rank;
  std::string message;
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

detail::progress::progress(links l, abort_fn on_abort)
    : links_(std::move(l)), on_abort_(std::move(on_abort)), waiter_(links_.devices) {}

void detail::progress::run(detail::schedule& s, const call_info& call) {
  const std::size_t elem = dtype_size(call.type);
  const std::size_t chunk = links_.chunk_bytes;
  std::vector<queue_state>& queues = queues_;
  queues.clear();
  for (std::size_t q = 0; q < s.queues.size(); ++q) {
    if (s.queues[q].empty()) continue;
    const int peer = static_cast<int>(q / 2 / detail::k_channels);
    const int channel = static_cast<int>(q / 2 % detail::k_channels);
    const int dev = links_.device_of[static_cast<std::size_t>(peer)];
    device* d = links_.devices[static_cast<std::size_t>(dev)];
    detail::pair* p = d->pair_to(peer, channel);
    queues.push_back({&s.queues[q], 0, p, peer, (q & 1) != 0, d->kind() == transport::tcp,
                      static_cast<std::uint8_t>(dev)});
  }

  auto gate_ok = [&](const op& o) {
    for (int g : s.gates_of(o)) {
      if (!s.ops[g].complete()) return false;
    }
    return true;
  };
  // Bytes `o` may process from its current position.
  auto allowed = [&](const op& o) -> std::size_t {
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
  };

  auto header_for = [&](const op& o, std::size_t n) {
    chunk_header h;
    h.coll = static_cast<std::uint8_t>(call.coll);
    h.dtype = static_cast<std::uint8_t>(call.type);
    h.op = static_cast<std::uint8_t>(call.op);
    h.algo = static_cast<std::uint8_t>(call.algo);
    h.seq = call.seq;
    h.count = call.count;
    h.offset = o.done;
    h.nbytes = static_cast<std::uint32_t>(n);
    h.tag = o.tag;
    h.peer = links_.rank;
    h.message_bytes = o.bytes;
    return h;
  };

  auto validate = [&](const chunk_header& h, const op& o) {
    if (h.flags & detail::k_flag_abort) {
      throw engine_error{engine_error::peer, h.peer,
                         fmt::format("rank {} aborted (it blames rank {})", o.peer, h.peer)};
    }
    const bool same = h.coll == static_cast<std::uint8_t>(call.coll) && h.seq == call.seq &&
                      h.dtype == static_cast<std::uint8_t>(call.type) &&
                      h.op == static_cast<std::uint8_t>(call.op) &&
                      h.algo == static_cast<std::uint8_t>(call.algo) && h.count == call.count;
    if (!same) {
      throw engine_error{
          engine_error::mismatch, o.peer,
          fmt::format(
              "rank {} called {} while this rank called {}", o.peer,
              describe(static_cast<collective>(h.coll), h.seq, h.count, static_cast<dtype>(h.dtype),
                       static_cast<reduce_op>(h.op), static_cast<algorithm>(h.algo)),
              describe(call))};
    }
    if (h.tag != o.tag || h.message_bytes != o.bytes || h.offset != o.done - o.chunk_pos) {
      throw engine_error{engine_error::mismatch, o.peer,
                         fmt::format("rank {} sent message {} ({} bytes, offset {}) where this "
                                     "rank expected message {} ({} bytes, offset {})",
                                     o.peer, h.tag, h.message_bytes, h.offset, o.tag, o.bytes,
                                     o.done - o.chunk_pos)};
    }
  };

  auto step_send = [&](op& o, detail::pair& p) {
    bool moved = false;
    while (!o.complete()) {
      std::size_t n = 0;
      if (o.bytes == 0) {
        if (!gate_ok(o)) break;
      } else {
        n = std::min(chunk, o.bytes - o.done);
        const std::size_t a = allowed(o);
        if (a < n) n = a / elem * elem;
        if (n == 0) break;
      }
      if (!p.try_send(header_for(o, n), o.src + o.done)) break;
      o.done += n;
      o.started = true;
      moved = true;
    }
    return moved;
  };

  auto step_recv = [&](op& o, detail::pair& p) {
    bool moved = false;
    while (!o.complete()) {
      if (o.bytes == 0 && !gate_ok(o)) break;
      const std::byte* payload = nullptr;
      const chunk_header* h = p.peek(&payload);
      if (h == nullptr) break;
      validate(*h, o);
      const std::size_t avail = h->nbytes - o.chunk_pos;
      std::size_t n = avail;
      if (n > o.bytes - o.done) {
        throw engine_error{engine_error::mismatch, o.peer,
                           fmt::format("rank {} sent more bytes than this rank expects", o.peer)};
      }
      if (o.bytes > 0) {
        const std::size_t a = allowed(o);
        if (a < n) n = a / elem * elem;
        if (n == 0 && avail > 0) break;
      }
      if (n > 0) {
        if (o.kind == op::recv) {
          std::memcpy(o.dst + o.done, payload + o.chunk_pos, n);
        } else {
          detail::reduce(o.dst + o.done, o.src + o.done, payload + o.chunk_pos, n / elem, call.type,
                         call.op);
        }
      }
      o.done += n;
      o.chunk_pos += n;
      o.started = true;
      moved = true;
      if (o.chunk_pos == h->nbytes) {
        p.release();
        o.chunk_pos = 0;
      }
    }
    return moved;
  };

  const std::uint64_t call_id = (static_cast<std::uint64_t>(call.coll) << 56) ^ call.seq;
  struct waiting_reset {
    const std::vector<device*>& devices;
    ~waiting_reset() {
      for (device* d : devices) d->set_waiting(0, -1);
    }
  } reset_waiting{links_.devices};
  std::uint32_t uses = 0;  // the devices this call waits on, a bit each
  for (const auto& q : queues) uses |= 1u << q.dev;

  auto progress = [&](bool& finished) {
    bool moved = false;
    finished = true;
    for (auto& q : queues) {
      if (q.flushes) moved |= q.p->flush();
      while (q.head < q.ops->size()) {
        op& o = s.ops[(*q.ops)[q.head]];
        moved |= q.is_recv ? step_recv(o, *q.p) : step_send(o, *q.p);
        if (!o.complete()) break;
        ++q.head;
      }
      if (q.head < q.ops->size()) finished = false;
    }
    return moved;
  };

  try {
    steady::time_point idle_since{};
    steady::time_point last_health{};  // set when this call first goes idle
    // The call's deadline: given, or `timeout` after it first had to wait.
    steady::time_point deadline = call.deadline;
    bool idle = false;
    const auto spin = std::chrono::microseconds(policy.spin_us);
    const auto yield = std::chrono::microseconds(policy.yield_us);
    unsigned polls = 0;              // idle polls since the clock was last read
    bool spinning = false;           // idle, and still within the busy-poll period
    steady::time_point last_read{};  // the previous clock read of this spin
    while (true) {
      bool finished = false;
      const bool moved = progress(finished);
      if (finished) break;
      if (moved) {
        idle = false;
        continue;
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
      if (idle_since == steady::time_point{}) {
        idle_since = now;
        if (last_health == steady::time_point{}) last_health = now;
        if (deadline == steady::time_point{}) deadline = now + call.timeout;
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
      if (now >= deadline) {
        const queue_state* blame = nullptr;
        for (const auto& q : queues) {
          if (q.head < q.ops->size() && (blame == nullptr || (q.is_recv && !blame->is_recv))) {
            blame = &q;
          }
        }
        const op& o = s.ops[(*blame->ops)[blame->head]];
        const int missing = links_.devices[blame->dev]->root_of_stall(call_id, blame->peer);
        throw engine_error{
            engine_error::timeout, missing,
            fmt::format("timed out after {} ms waiting for rank {} ({} {}/{} bytes of message "
                        "{}){}",
                        call.timeout.count(), blame->peer, blame->is_recv ? "received" : "sent",
                        o.done, o.bytes, o.tag,
                        missing != blame->peer
                            ? fmt::format("; rank {} waits in turn, rank {} never joined",
                                          blame->peer, missing)
                            : std::string())};
      }
      // Before sleeping: are the peers we wait for still there?
      bool recovered = false;
      if (now - last_health >= std::chrono::milliseconds(20)) {
        last_health = now;
        for (const auto& q : queues) {
          if (q.head >= q.ops->size()) continue;
          const detail::peer_health h = links_.devices[q.dev]->health(q.peer);
          if (h.ok) continue;
          bool again = false;
          if (progress(again)) {  // data it left behind is still usable
            recovered = true;
            break;
          }
          if (h.aborted) {
            throw engine_error{engine_error::peer, h.culprit,
                               fmt::format("rank {} aborted: {}", q.peer, h.reason)};
          }
          throw engine_error{engine_error::peer, q.peer,
                             h.dead ? fmt::format("rank {} died (its process is gone)", q.peer)
                                    : fmt::format("rank {} closed its communicator", q.peer)};
        }
      }
      if (recovered) {
        idle = false;
        continue;
      }
      const int left_ms = std::max<int>(
          1, static_cast<int>(
                 std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) +
                 1);
      {  // tell the peers whom we wait for
        int waiting_for = -1;
        for (const auto& q : queues) {
          if (q.head < q.ops->size() && (waiting_for < 0 || q.is_recv)) {
            waiting_for = q.peer;
            if (q.is_recv) break;
          }
        }
        for (device* d : links_.devices) d->set_waiting(call_id, waiting_for);
      }
      const bool again = waiter_.wait(uses, std::min(left_ms, 50), [&] {
        bool done = false;
        return progress(done);
      });
      if (again) idle = false;
    }
  } catch (const engine_error& e) {
    const std::string message =
        fmt::format("{} on rank {}: {}", describe(call), links_.rank, e.message);
    on_abort_(e.rank, message);
    switch (e.kind) {
      case engine_error::timeout:
        throw timeout_error(message, std::string(to_string(call.coll)), call.seq, e.rank);
      case engine_error::mismatch:
        throw mismatch_error(message, std::string(to_string(call.coll)), call.seq, e.rank);
      case engine_error::peer:
        throw peer_error(message, std::string(to_string(call.coll)), call.seq, e.rank);
    }
  } catch (const detail::peer_gone& e) {
    const std::string message =
        fmt::format("{} on rank {}: {}", describe(call), links_.rank, e.what());
    on_abort_(e.rank, message);
    throw peer_error(message, std::string(to_string(call.coll)), call.seq, e.rank);
  }
}

}  // namespace keel::comm
