// Socket helpers shared by tcp_store and the TCP transport (internal).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace keel::comm::net {

using clock = std::chrono::steady_clock;

// A listening IPv4 socket on `port` (0: any free port); returns the fd, port via out-param.
int listen_on(const std::string& bind_address, std::uint16_t port, std::uint16_t& bound_port);
// Connects to host:port, retrying refused connections until `deadline`. Returns -1 on timeout.
int connect_to(const std::string& host, std::uint16_t port, clock::time_point deadline);
// Accepts one connection, waiting until `deadline`. Returns -1 on timeout.
int accept_until(int listen_fd, clock::time_point deadline);
void set_nonblocking(int fd);
void set_nodelay(int fd);
// Blocking-with-deadline full transfers on a (possibly non-blocking) socket. Return false on
// timeout; throw keel::backend_error on a broken connection (peer closed: message says so).
bool send_all(int fd, const void* data, std::size_t n, clock::time_point deadline);
bool recv_all(int fd, void* data, std::size_t n, clock::time_point deadline);
// The address other hosts can reach this one at, as seen on the route to `peer_host`.
std::string local_address_towards(const std::string& peer_host);
// Milliseconds until deadline, clamped to [0, cap_ms].
int ms_until(clock::time_point deadline, int cap_ms);

}  // namespace keel::comm::net
