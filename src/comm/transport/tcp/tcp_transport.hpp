// TCP transport (internal): one non-blocking socket per (peer, channel), registered
// edge-triggered with the communicator's epoll instance. Chunks are written with one
// sendmsg(header, payload) straight from the caller's buffer; only what the kernel did not
// take is copied to a pending buffer. The receiver reads greedily into a buffer of two
// chunks and hands out complete chunks in place. EOF or a reset throws peer_gone.
#pragma once

#include <memory>

#include "../pair.hpp"

namespace keel::comm::detail {

// Takes ownership of `fd` (connected; made non-blocking here).
std::unique_ptr<pair> make_tcp_pair(int fd, int peer, std::size_t chunk_bytes);
// The socket of a TCP pair, for epoll registration; -1 for other pairs.
int tcp_pair_fd(const pair& p);
// Best effort, never blocks: sends an abort chunk and shuts the socket down.
void tcp_pair_abort(pair& p, const chunk_header& abort_header) noexcept;

}  // namespace keel::comm::detail
