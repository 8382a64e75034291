// The TCP device (internal): this rank's sockets to its peers on other hosts (or to every
// peer under KEEL_COMM_TRANSPORT=tcp), one non-blocking socket per (peer, channel).
//
// Bootstrap in two steps. The constructor listens on an ephemeral port (port() is what the
// rank publishes in the store); connect() then connects to every lower-ranked peer (sending
// a hello: magic, rank, channel and the communicator's nonce) and accepts the connections of
// the higher-ranked ones, reading their hellos side by side (poll), so that a stray
// connection which never sends its hello, or closes, costs nothing but its own slot: at
// most 64 at once, each dropped after 5 s or a wrong hello. The listening socket is closed
// when connect() returns.
//
// Waiting: the sockets are registered edge-triggered with the device's own epoll instance,
// together with an eventfd for wake(); wait() is an epoll_wait on it, and wait_fd() is the
// epoll descriptor itself (readable while it has events), which drain() empties. arm() is a
// no-op: an edge that arrives after the last check still wakes the next epoll_wait. A peer
// that goes away is noticed by its pair (EOF, reset: peer_gone), so health() always says ok.
// abort() sends an abort chunk on every socket that has nothing else queued and shuts it
// down, without blocking.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../device.hpp"
#include "tcp_transport.hpp"

namespace keel::comm::detail {

class tcp_device final : public device {
 public:
  struct endpoint {
    int rank = -1;
    std::string host;  // address to connect to (used for lower ranks only)
    std::uint16_t port = 0;
  };

  // Listens on `listen_address` (an IPv4 address; "0.0.0.0" for every interface). Throws
  // keel::backend_error when it cannot.
  tcp_device(int rank, int size, std::size_t chunk_bytes, const std::string& listen_address);
  ~tcp_device() override;
  tcp_device(const tcp_device&) = delete;
  tcp_device& operator=(const tcp_device&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  // Connects to every peer of `peers` (collective with them). Throws comm::timeout_error
  // naming the peer (collective "bootstrap") when one does not answer before `deadline`.
  void connect(const std::vector<endpoint>& peers, std::uint64_t nonce,
               std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds timeout);

  transport kind() const noexcept override { return transport::tcp; }
  pair* pair_to(int peer, int channel) noexcept override;
  bool arm(wake_via) noexcept override { return false; }
  void disarm() noexcept override {}
  void wait(int timeout_ms) noexcept override;
  int wait_fd() const noexcept override { return epoll_fd_; }
  void drain() noexcept override;
  void wake() noexcept override;
  void abort(int culprit, const std::string& reason) noexcept override;
  void close() noexcept override {}

 private:
  void accept_peers(int expected, std::uint64_t nonce,
                    std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds);
  void close_listener() noexcept;

  int rank_;
  int size_;
  std::size_t chunk_bytes_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  int epoll_fd_ = -1;
  int event_fd_ = -1;  // wake()
  std::vector<std::array<std::unique_ptr<tcp_pair>, k_channels>> pairs_;
};

}  // namespace keel::comm::detail
