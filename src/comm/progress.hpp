// The progress engine (internal): runs schedules (engine.hpp) to completion over the
// communicator's devices' pairs, or throws.
//
// run() steps every queue head without blocking — a send stages chunks while the pair has
// room and its gates allow, a receive copies or reduces chunks out of the pair in place —
// until no queue moves. Then it waits by the idle policy: busy-poll for spin_us (reading the
// clock only every 64th poll), sched_yield() for yield_us, then sleep on the devices' wait
// primitive (waiter.hpp: futex, epoll, or both at once) until something arrives or a
// deadline passes. A gap between two clock reads of a spin means the kernel ran someone else
// on this CPU meanwhile: the CPU is shared, and for the next second the rank spins at most
// 250 us before it sleeps (a spinning rank burns the time slice it needs once its peer
// answers; a sleeping one is woken by the peer's doorbell and preempts whoever runs).
// Before sleeping it asks the devices whether the peers it waits for are alive, and
// publishes whom it waits for, so that a stall is traced to the rank that never came.
//
// Several calls in flight (call_info::tag, one call per tag at a time): run() may be called
// from several threads at once. One of them, the driver, progresses every call in flight;
// the others wait until theirs is done, or until the driver's own call is done and one of
// them takes over (a newcomer wakes a sleeping driver through the devices' wake()). Chunks
// carry their call's tag; a chunk for another tag than the one its reader is at is copied
// aside (and found there by its own call), and while several calls are in flight a driver
// that cannot move copies aside whatever has arrived, so a ring never stays full behind an
// operation that waits on another: calls on different tags never wait on each other.
//
// A failure (timeout, dead or aborted peer, mismatched call) is reported to `on_abort`
// (which tells the peers) and thrown as the public error naming the collective, its
// sequence number and the rank to blame; every other call in flight then throws
// peer_error, as does every later call. Per-tag state is kept between calls, so that a small
// collective allocates nothing.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine.hpp"
#include "transport/device.hpp"
#include "transport/pair.hpp"
#include "transport/waiter.hpp"

namespace keel::comm::detail {

// What a rank does when nothing moves (the communicator sets it from the CPU count, the
// rank's affinity and KEEL_COMM_SPIN_US / KEEL_COMM_YIELD_US).
struct idle_policy {
  int spin_us = 100000;     // busy-poll this long when idle (0 when oversubscribed)
  int yield_us = 0;         // then sched_yield() this long, then sleep on futex / epoll
  bool spin_yields = true;  // sched_yield() now and then while spinning (not pinned)
};

// The communicator's devices, which progress drives but does not own.
struct links {
  int rank = 0;
  std::size_t chunk_bytes = 0;
  std::vector<device*> devices;
  std::vector<int> device_of;  // per peer: index into devices (-1: this rank)
};

class progress {
 public:
  using abort_fn = std::function<void(int culprit, const std::string& reason)>;
  progress(links l, abort_fn on_abort);
  ~progress();

  // Precondition: no other call with call.tag is in flight.
  void run(schedule& s, const call_info& call);

  idle_policy policy;

 private:
  using steady = std::chrono::steady_clock;
  struct queue_state {
    const std::vector<int>* ops;
    std::size_t head = 0;
    pair* p = nullptr;
    int peer = -1;
    bool is_recv = false;
    bool flushes = false;  // a tcp pair: push what is queued before anything else
    std::uint8_t dev = 0;  // index into links_.devices
    std::uint32_t rx = 0;  // index into staged_: (peer, channel)
  };
  struct call_state {
    schedule* s = nullptr;
    call_info call;
    std::uint64_t id = 0;  // for stall tracing
    std::size_t elem = 1;  // dtype size
    std::vector<queue_state> queues;
    std::uint32_t uses = 0;  // the devices it waits on, a bit each
    bool finished = false;   // every queue is done (the driver's view)
    bool done = false;       // reported to its thread (under mutex_)
    std::exception_ptr error;
    steady::time_point deadline{}, last_health{};
  };
  struct staged_chunk {
    chunk_header h;
    std::vector<std::byte> payload;
  };
  struct failure {  // raised inside the engine, turned into the public errors by fail()
    enum kind_t { timeout, peer, mismatch } kind;
    int rank;
    std::string message;
  };

  void prepare(call_state& c, schedule& s, const call_info& call);
  void drive(call_state& me);
  bool step(call_state& c);  // one pass over c's queues; sets c.finished
  bool step_send(call_state& c, op& o, pair& p);
  bool step_recv(call_state& c, queue_state& q, op& o);
  const chunk_header* current(call_state& c, queue_state& q, const std::byte** payload,
                              bool& staged);
  void release(call_state& c, queue_state& q, bool staged);
  void stage(queue_state& q, const chunk_header& h, const std::byte* payload);
  bool stage_all(call_state& c);
  void idle_checks(steady::time_point now, bool& recovered);
  void adopt();
  void retire(call_state& c);
  void fail(const failure& f, call_state& c);

  // A preemption seen while spinning (a clock gap over k_preempted) makes spins at most
  // k_contended_spin long until contended_until_.
  static constexpr std::chrono::microseconds k_preempted{200};
  static constexpr std::chrono::microseconds k_contended_spin{250};
  static constexpr std::chrono::seconds k_contended_for{1};
  steady::time_point contended_until_{};

  links links_;
  abort_fn on_abort_;
  waiter waiter_;
  std::vector<std::deque<staged_chunk>> staged_;  // per (peer, channel): chunks set aside
  std::size_t staged_count_ = 0;                  // in all of them

  // Shared between the threads of calls in flight, under mutex_.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<std::uint32_t, std::unique_ptr<call_state>> slots_;  // by tag, reused
  call_state* slot0_ = nullptr;                                           // tag 0's
  std::vector<call_state*> active_;                                       // calls in flight
  bool driving_ = false;
  std::string failed_;                // set once a call failed: the communicator is aborted
  std::atomic<bool> pending_{false};  // active_ changed: the driver re-reads it

  // The driver's own (only one thread drives at a time).
  std::vector<call_state*> calls_;
  call_state* stepping_ = nullptr;  // the call being stepped, for errors from pairs
};

}  // namespace keel::comm::detail
