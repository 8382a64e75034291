// The shared-memory device (internal): this rank's rings to the other ranks of its host.
//
// The constructor is its share of the bootstrap, collective among the local ranks: it
// creates this rank's segment (shm_transport.hpp), publishes "<prefix>/shm/<rank>" in the
// store, maps every local peer's segment once all exist, publishes "<prefix>/mapped/<rank>"
// and, once every local rank mapped, removes the names (the mappings stay valid; a crash
// leaves nothing behind). If anything fails on the way it removes the names of every local
// rank before it throws.
//
// Waiting: arm(native) announces a futex sleep on the rank's doorbell and wait() sleeps on
// it; arm(fd) — for a rank that also waits on TCP peers — asks the peers to ring the
// doorbell FIFO as well, which wait_fd() is the read end of (made only when `fd_wake`).
// health() reads a peer's control block and checks its process; abort() and close() mark
// this rank's control block and wake every local peer.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "../device.hpp"
#include "keel/comm/store.hpp"
#include "shm_transport.hpp"

namespace keel::comm::detail {

class shm_device final : public device {
 public:
  struct config {
    std::string key_prefix;   // the communicator's store prefix
    std::string name_prefix;  // the segments' names: <name_prefix>-<rank>
    int rank = 0;
    int size = 0;
    std::vector<int> local_ranks;  // ascending, including `rank`
    std::size_t chunk_bytes = 0;
    int slots = 0;
    bool fd_wake = false;  // the rank also has TCP peers: make the doorbell FIFO
  };
  shm_device(store& s, const config& c, std::chrono::steady_clock::time_point deadline);
  ~shm_device() override;

  transport kind() const noexcept override { return transport::shm; }
  pair* pair_to(int peer, int channel) noexcept override;
  bool arm(wake_via how) noexcept override;
  void disarm() noexcept override { domain_->end_sleep(); }
  void wait(int timeout_ms) noexcept override { domain_->sleep(seen_, timeout_ms); }
  int wait_fd() const noexcept override { return domain_->bell_fd(); }
  void drain() noexcept override { domain_->drain_bell_fd(); }
  void wake() noexcept override { domain_->wake_self(); }
  peer_health health(int peer) const override { return domain_->health(peer); }
  void set_waiting(std::uint64_t call_id, int peer) noexcept override {
    domain_->set_waiting(call_id, peer);
  }
  int root_of_stall(std::uint64_t call_id, int peer) const override {
    return domain_->root_of_stall(call_id, peer);
  }
  void abort(int culprit, const std::string& reason) noexcept override {
    domain_->abort(culprit, reason);
  }
  void close() noexcept override { domain_->close(); }

 private:
  std::unique_ptr<shm_domain> domain_;
  std::vector<std::array<std::unique_ptr<pair>, k_channels>> pairs_;  // by global rank
  std::uint32_t seen_ = 0;  // the doorbell's value when arm(native) announced the sleep
};

}  // namespace keel::comm::detail
