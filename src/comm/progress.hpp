// The progress engine (internal): runs one schedule (engine.hpp) to completion over the
// communicator's devices' pairs, or throws.
//
// run() steps every queue head without blocking — a send stages chunks while the pair has
// room and its gates allow, a receive copies or reduces chunks out of the pair in place —
// until no queue moves. Then it waits by the idle policy: busy-poll for spin_us (reading the
// clock only every 64th poll), sched_yield() for yield_us, then sleep on the devices' wait
// primitive (waiter.hpp: futex, epoll, or both at once) until something arrives or the
// call's deadline passes. A gap between two clock reads of a spin means the kernel ran
// someone else on this CPU meanwhile: the CPU is shared, and for the next second the rank
// spins at most 250 us before it sleeps (a spinning rank burns the time slice it needs once
// its peer answers; a sleeping one is woken by the peer's doorbell and preempts whoever
// runs). Before sleeping it asks the devices whether the peers it waits for are alive, and
// publishes whom it waits for, so that a stall is traced to the rank that never came. A
// failure (timeout, dead or aborted peer, mismatched call) is reported to `on_abort` (which
// tells the peers) and thrown as the public error naming the collective, its sequence
// number and the rank to blame.
//
// One thread at a time per progress object; it keeps per-queue state between calls so that
// a small collective allocates nothing.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
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

  void run(schedule& s, const call_info& call);

  idle_policy policy;

 private:
  struct queue_state {
    const std::vector<int>* ops;
    std::size_t head = 0;
    pair* p = nullptr;
    int peer = -1;
    bool is_recv = false;
    bool flushes = false;  // a tcp pair: push what is queued before anything else
    std::uint8_t dev = 0;  // index into links_.devices
  };
  // A preemption seen while spinning (a clock gap over k_preempted) makes spins at most
  // k_contended_spin long until contended_until_.
  static constexpr std::chrono::microseconds k_preempted{200};
  static constexpr std::chrono::microseconds k_contended_spin{250};
  static constexpr std::chrono::seconds k_contended_for{1};
  std::chrono::steady_clock::time_point contended_until_{};
  links links_;
  abort_fn on_abort_;
  waiter waiter_;
  std::vector<queue_state> queues_;  // reused by every call
};

}  // namespace keel::comm::detail
