// The one wait primitive over several devices (internal).
//
// A call waits on the devices whose pairs it still uses. When that is one device, the
// waiter blocks in the device's own primitive: a futex doorbell for shm (no syscall on the
// peers' side unless this rank announced it sleeps), epoll for tcp. When it is several —
// a job with shm peers on this host and TCP peers elsewhere — every device is armed to be
// woken through its descriptor (the shm doorbell then also writes to this rank's doorbell
// FIFO, the tcp device's descriptor is its epoll instance) and the waiter blocks in one
// epoll_wait over those descriptors: a chunk from either side wakes it at once and an idle
// rank makes no syscalls at all until the timeout, instead of polling one at a time. A
// device without a descriptor (none today) would make the waiter fall back to 1 ms polls.
//
// One thread at a time (the progress engine's driver).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "device.hpp"

namespace keel::comm::detail {

class waiter {
 public:
  // `devices`: every device of the communicator (not owned; they outlive the waiter).
  explicit waiter(std::vector<device*> devices);
  ~waiter();
  waiter(const waiter&) = delete;
  waiter& operator=(const waiter&) = delete;

  // Blocks on `used` (a bit per index into `devices`) for at most timeout_ms. `recheck` is
  // called once after arming, when a device asks for it; if it returns true (something
  // moved) the wait ends at once. Returns recheck's answer (false after a real wait).
  bool wait(std::uint32_t used, int timeout_ms, const std::function<bool()>& recheck);

  const std::vector<device*>& devices() const noexcept { return devices_; }

 private:
  std::vector<device*> devices_;
  int epoll_fd_ = -1;  // over every device's wait_fd(), when there are several
};

}  // namespace keel::comm::detail
