#include "net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "keel/core/error.hpp"

namespace keel::comm::net {
namespace {

sockaddr_in resolve(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || result == nullptr) {
    throw keel::invalid_argument(
        fmt::format("cannot resolve host '{}': {}", host, gai_strerror(rc)));
  }
  sockaddr_in addr{};
  std::memcpy(&addr, result->ai_addr, sizeof addr);
  ::freeaddrinfo(result);
  addr.sin_port = htons(port);
  return addr;
}

[[noreturn]] void fail(const char* what) {
  throw keel::backend_error(fmt::format("{}: {}", what, std::strerror(errno)));
}

}  // namespace

int ms_until(clock::time_point deadline, int cap_ms) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > cap_ms ? cap_ms : static_cast<int>(left.count());
}

int listen_on(const std::string& bind_address, std::uint16_t port, std::uint16_t& bound_port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("socket");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = resolve(bind_address, port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    ::close(fd);
    throw keel::backend_error(
        fmt::format("cannot listen on {}:{}: {}", bind_address, port, std::strerror(e)));
  }
  if (::listen(fd, 1024) != 0) fail("listen");
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  bound_port = ntohs(addr.sin_port);
  return fd;
}

int connect_to(const std::string& host, std::uint16_t port, clock::time_point deadline) {
  const sockaddr_in addr = resolve(host, port);
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket");
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      set_nodelay(fd);
      return fd;
    }
    const int e = errno;
    ::close(fd);
    if (e != ECONNREFUSED && e != ETIMEDOUT && e != EHOSTUNREACH && e != ENETUNREACH &&
        e != EINTR && e != EAGAIN && e != ECONNRESET) {
      throw keel::backend_error(fmt::format("connect to {}:{}: {}", host, port, std::strerror(e)));
    }
    if (clock::now() + pause >= deadline) return -1;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

int accept_until(int listen_fd, clock::time_point deadline) {
  while (true) {
    pollfd p{listen_fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, ms_until(deadline, 1000));
    if (rc < 0 && errno != EINTR) fail("poll");
    if (rc > 0) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        set_nodelay(fd);
        return fd;
      }
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) fail("accept");
    }
    if (clock::now() >= deadline) return -1;
  }
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool send_all(int fd, const void* data, std::size_t n, clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      throw keel::backend_error(fmt::format("connection broken: {}", std::strerror(errno)));
    }
    pollfd pfd{fd, POLLOUT, 0};
    if (clock::now() >= deadline) return false;
    ::poll(&pfd, 1, ms_until(deadline, 1000));
  }
  return true;
}

bool recv_all(int fd, void* data, std::size_t n, clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) throw keel::backend_error("connection closed by peer");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      throw keel::backend_error(fmt::format("connection broken: {}", std::strerror(errno)));
    }
    pollfd pfd{fd, POLLIN, 0};
    if (clock::now() >= deadline) return false;
    ::poll(&pfd, 1, ms_until(deadline, 1000));
  }
  return true;
}

std::string resolve_ipv4(const std::string& host) {
  const sockaddr_in addr = resolve(host, 0);
  char text[INET_ADDRSTRLEN] = {};
  if (!::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof text)) return "?";
  return text;
}

bool is_loopback(const std::string& host) {
  const sockaddr_in addr = resolve(host, 0);
  return (ntohl(addr.sin_addr.s_addr) >> 24) == 127;
}

bool is_local_address(const std::string& host) {
  sockaddr_in addr = resolve(host, 0);
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string peer_name(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      addr.sin_family != AF_INET) {
    return "?";
  }
  char text[INET_ADDRSTRLEN] = {};
  if (!::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof text)) return "?";
  return fmt::format("{}:{}", text, ntohs(addr.sin_port));
}

std::string local_address_towards(const std::string& peer_host) {
  // A UDP "connect" picks the route without sending anything.
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "127.0.0.1";
  sockaddr_in addr = resolve(peer_host, 9);
  std::string out = "127.0.0.1";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    socklen_t len = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      char text[INET_ADDRSTRLEN];
      if (::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof text)) out = text;
    }
  }
  ::close(fd);
  return out;
}

}  // namespace keel::comm::net
