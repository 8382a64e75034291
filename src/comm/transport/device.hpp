// A transport's device (gloo's Device), internal: all the communicator and the progress
// engine need from a transport, so that neither touches a file descriptor, a futex, epoll
// or a concrete pair type.
//
// A device reaches a fixed set of peers, connected when it is made (its share of the
// bootstrap: shm creates and maps the segments, tcp listens, connects and accepts). It
// hands out one pair per (peer, channel) and owns them. Besides the pairs it offers
//
//   waiting    one primitive in two forms. arm(how) tells the peers that this rank may
//              block, so that whatever they do next wakes it; the caller checks its pairs
//              once more (when arm() says so) and then blocks. When this device is the only
//              one it waits on, it blocks in wait(), the device's own primitive (shm: a
//              futex doorbell; tcp: epoll over its sockets). When it waits on several
//              devices at once (a job with shm and TCP peers) it arms each with
//              wake_via::fd and polls their wait_fd()s together (waiter.hpp), calling drain()
//              on a device whose fd fired. disarm() ends a wait either way.
//   health     health(peer): whether a peer is still there (shm reads its control block and
//              checks its process; tcp learns it from the sockets, so it always says ok);
//              set_waiting() / root_of_stall() trace a stall to the rank that never came.
//   abort      abort(culprit, reason) tells every peer at once (never blocks, never throws);
//              close() tells them this rank is gone for good.
//
// One thread at a time uses a device, except wake(), which any thread may call: it ends the
// owner's current (or next) wait early.
#pragma once

#include <cstdint>
#include <string>

#include "keel/comm/types.hpp"
#include "pair.hpp"

namespace keel::comm::detail {

struct peer_health {
  bool ok = true;
  bool dead = false;     // the process is gone
  bool aborted = false;  // it raised an error; culprit/reason say why
  bool closed = false;   // it destroyed its communicator
  int culprit = -1;
  std::string reason;
};

enum class wake_via : std::uint8_t { native, fd };

class device {
 public:
  virtual ~device() = default;
  virtual transport kind() const noexcept = 0;
  // The pair to `peer` on `channel`; nullptr when this device does not reach `peer`.
  virtual pair* pair_to(int peer, int channel) noexcept = 0;

  // Waiting. arm() returns true when the caller must check its pairs once more before it
  // blocks (what arrived between its last check and arm() may not wake it).
  virtual bool arm(wake_via how) noexcept = 0;
  virtual void disarm() noexcept = 0;
  // Blocks (after arm(native)) until a peer wakes this rank, wake() is called or timeout_ms.
  virtual void wait(int timeout_ms) noexcept = 0;
  // Readable (after arm(fd)) when there is news; -1 when the device has no such descriptor.
  virtual int wait_fd() const noexcept = 0;
  // After wait_fd() was readable: consumes the notification.
  virtual void drain() noexcept = 0;
  // Any thread: ends the owner's current or next wait early.
  virtual void wake() noexcept = 0;

  // Health and stall tracing.
  virtual peer_health health(int) const { return {}; }
  virtual void set_waiting(std::uint64_t, int) noexcept {}
  virtual int root_of_stall(std::uint64_t, int peer) const { return peer; }

  virtual void abort(int culprit, const std::string& reason) noexcept = 0;
  virtual void close() noexcept = 0;
};

}  // namespace keel::comm::detail
