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
// The IPv4 address `host` resolves to, as dotted text. Throws keel::invalid_argument when it
// does not resolve.
std::string resolve_ipv4(const std::string& host);
// Whether `host` resolves to 127.0.0.0/8.
bool is_loopback(const std::string& host);
// Whether `host` resolves to an address of this machine (one a socket can bind to).
bool is_local_address(const std::string& host);
// "a.b.c.d:port" of a connected socket's peer ("?" when unknown).
std::string peer_name(int fd);
// Milliseconds until deadline, clamped to [0, cap_ms].
int ms_until(clock::time_point deadline, int cap_ms);

}  // namespace keel::comm::net
