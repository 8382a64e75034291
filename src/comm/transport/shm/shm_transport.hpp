// POSIX shared-memory transport (internal): the segments, their rings and doorbells.
//
// Every rank owns one segment, /dev/shm/keel-<job>-<nonce>-<rank>: a control block (a futex
// doorbell, a sleeping flag, the owner's pid and abort state) followed by one inbound ring
// per (local peer, channel). A ring is single-producer single-consumer: `slots` slots of
// 64-byte header + chunk_bytes payload, and a tail counter written by the consumer on a
// cache line of its own. The producer copies a chunk into the slot, then stores the slot's
// stamp (the chunk's sequence number, in the header's last 8 bytes; release) and rings the
// consumer's doorbell; the consumer polls the stamp of the next slot, reduces or copies
// straight out of the slot, publishes tail and rings the producer's doorbell. A doorbell is a
// futex word bumped, and woken, only when its owner announced that it is about to sleep: a
// Dekker handshake. Where the kernel has membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), the
// handshake is asymmetric: the rank about to sleep pays a membarrier() and the common side
// (ringing after every chunk) only a compiler barrier; elsewhere both use seq_cst fences. A
// busy rank pays no syscalls.
//
// A rank that also has TCP peers cannot sleep on a futex alone (epoll cannot wait on one),
// so it owns a second doorbell, a FIFO next to its segment (…-<rank>.bell, made when
// `fd_wake`): announcing a sleep "by fd" sets the flag to 2, and a peer that rings a rank
// in that state writes one byte to its FIFO instead of a futex wake. The rank polls the FIFO
// together with its sockets, so data from either side wakes it at once. All segments and
// FIFOs are unlinked once every local rank has mapped (and opened) them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../device.hpp"
#include "../pair.hpp"

namespace keel::comm::detail {

struct shm_control {
  alignas(64) std::atomic<std::uint32_t> bell{0};
  alignas(64) std::atomic<std::uint32_t> sleeping{0};
  std::uint32_t asymmetric = 0;  // 1: the owner announces sleep with membarrier()
  alignas(64) std::atomic<std::uint32_t> state{0};  // 0 live, 1 aborted, 2 closed
  // What the owner is blocked on (for naming the root of a stall): call id and peer.
  std::atomic<std::uint64_t> wait_call{0};
  std::atomic<std::int32_t> wait_for{-1};
  std::int32_t culprit = -1;
  std::int32_t pid = 0;
  char reason[256] = {};
};

// How a peer rings one rank: its control block and, when it has one, its FIFO.
struct doorbell {
  shm_control* ctl = nullptr;
  int fd = -1;
};

class shm_domain {
 public:
  // `local_ranks`: the global ranks on this host (ascending, includes `rank`).
  shm_domain(std::string name_prefix, int rank, std::vector<int> local_ranks,
             std::size_t chunk_bytes, int slots, bool fd_wake);
  ~shm_domain();
  shm_domain(const shm_domain&) = delete;
  shm_domain& operator=(const shm_domain&) = delete;

  // Step 1: create and size this rank's segment (done in the constructor).
  // Step 2, after every local rank created its own: map the others (and open their FIFOs).
  void map_peers();
  // Step 3, after every local rank mapped: remove the names (mappings stay valid).
  void unlink_own() noexcept;
  // Best effort, for crash cleanup: removes the names of every local rank.
  void unlink_all() noexcept;

  std::unique_ptr<pair> make_pair(int peer, int channel);

  // Waiting on the own doorbell: announce_sleep(), check once more, then sleep() on the futex
  // (by_fd false) or poll bell_fd() (by_fd true, only with a FIFO) and drain_bell_fd().
  std::uint32_t bell() const noexcept { return own()->bell.load(std::memory_order_acquire); }
  void announce_sleep(bool by_fd) noexcept;
  void end_sleep() noexcept;
  void sleep(std::uint32_t seen, int timeout_ms) noexcept;
  int bell_fd() const noexcept { return own_fifo_; }
  void drain_bell_fd() noexcept;
  // Any thread: rings this rank's own doorbell (both kinds), ending its sleep.
  void wake_self() noexcept;

  peer_health health(int peer) const;
  // Publishes (call id, peer) this rank waits for; peer -1 when not waiting.
  void set_waiting(std::uint64_t call_id, int peer) noexcept {
    own()->wait_call.store(call_id, std::memory_order_relaxed);
    own()->wait_for.store(peer, std::memory_order_relaxed);
  }
  // Follows "waits for" links from `peer` among local ranks blocked in the same call: the
  // last rank of the chain is the one actually missing.
  int root_of_stall(std::uint64_t call_id, int peer) const;
  // Marks this rank aborted (culprit, reason) and wakes every local peer.
  void abort(int culprit, const std::string& reason) noexcept;
  void close() noexcept;

  static void ring(const doorbell& d) noexcept;
  std::size_t segment_bytes() const noexcept { return segment_bytes_; }

 private:
  shm_control* own() const noexcept { return ctl_[my_local_]; }
  int local_index(int rank) const;
  std::byte* ring_base(int owner_local, int producer_local, int channel) const noexcept;
  std::string name_of(int rank) const;
  std::string fifo_path(int rank) const;
  void wake_all_peers() noexcept;

  std::string prefix_;
  int rank_;
  int my_local_ = 0;
  std::vector<int> local_ranks_;
  std::size_t chunk_bytes_;
  int slots_;
  std::size_t slot_bytes_;
  std::size_t ring_bytes_;
  std::size_t segment_bytes_;
  std::vector<std::byte*> base_;
  std::vector<shm_control*> ctl_;
  bool own_linked_ = false;
  bool fd_wake_ = false;
  bool fifo_linked_ = false;
  int own_fifo_ = -1;           // read end (opened read-write: never EOF)
  std::vector<int> peer_fifo_;  // write ends, by local index (-1: none)
};

}  // namespace keel::comm::detail
