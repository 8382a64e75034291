// TCP transport (internal): one non-blocking socket per (peer, channel). Chunks are written
// with one sendmsg(header, payload) straight from the caller's buffer; only what the kernel
// did not take is copied to a pending buffer (payloads are padded to 8 bytes on the wire, so
// every header and payload lands 8-aligned in the receive buffer). The receiver reads
// greedily into a buffer of two chunks and hands out complete chunks in place. EOF, a reset
// or a corrupt stream throws peer_gone. The sockets are the tcp device's (tcp_device.hpp),
// which registers them with its epoll instance.
#pragma once

#include <cstddef>
#include <vector>

#include "../pair.hpp"

namespace keel::comm::detail {

class tcp_pair final : public pair {
 public:
  // Takes ownership of `fd` (connected; made non-blocking here).
  tcp_pair(int fd, int peer, std::size_t chunk_bytes);
  ~tcp_pair() override;
  tcp_pair(const tcp_pair&) = delete;
  tcp_pair& operator=(const tcp_pair&) = delete;

  int fd() const noexcept { return fd_; }
  bool try_send(const chunk_header& h, const void* payload) override;
  bool flush() override;
  const chunk_header* peek(const std::byte** payload) override;
  void release() override;
  // Best effort, never blocks: sends `abort_header` unless a chunk is half sent, then shuts
  // the socket down.
  void abort(const chunk_header& abort_header) noexcept;

 private:
  std::size_t max_needed() const;
  bool drain();  // true when nothing is pending any more
  [[noreturn]] void broken(const char* what);

  int fd_;
  int peer_;
  std::vector<std::byte> out_;
  std::size_t out_pos_ = 0;
  std::vector<std::byte> in_;
  std::size_t start_ = 0;
  std::size_t end_ = 0;
};

}  // namespace keel::comm::detail
