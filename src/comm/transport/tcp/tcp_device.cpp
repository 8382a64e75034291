#include "tcp_device.hpp"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "../../net.hpp"
#include "keel/comm/error.hpp"
#include "keel/core/error.hpp"

namespace keel::comm::detail {
namespace {

using steady = std::chrono::steady_clock;

struct hello {
  std::uint32_t magic = k_chunk_magic;
  std::int32_t rank = -1;
  std::int32_t channel = -1;
  std::uint32_t pad = 0;
  std::uint64_t nonce = 0;
};

}  // namespace

tcp_device::tcp_device(int rank, int size, std::size_t chunk_bytes,
                       const std::string& listen_address)
    : rank_(rank), size_(size), chunk_bytes_(chunk_bytes), pairs_(static_cast<std::size_t>(size)) {
  listen_fd_ = net::listen_on(listen_address, 0, port_);
}

tcp_device::~tcp_device() {
  close_listener();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (event_fd_ >= 0) ::close(event_fd_);
}

void tcp_device::close_listener() noexcept {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

pair* tcp_device::pair_to(int peer, int channel) noexcept {
  if (peer < 0 || peer >= size_) return nullptr;
  return pairs_[static_cast<std::size_t>(peer)][static_cast<std::size_t>(channel)].get();
}

void tcp_device::connect(const std::vector<endpoint>& peers, std::uint64_t nonce,
                         steady::time_point deadline, std::chrono::milliseconds timeout) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || event_fd_ < 0) {
    throw keel::backend_error(fmt::format("tcp: epoll/eventfd: {}", std::strerror(errno)));
  }
  // Connect to lower ranks, accept from higher ones.
  int expected = 0;
  for (const endpoint& e : peers) {
    if (e.rank > rank_) {
      expected += k_channels;
      continue;
    }
    for (int c = 0; c < k_channels; ++c) {
      const int fd = net::connect_to(e.host, e.port, deadline);
      if (fd < 0) {
        throw timeout_error(fmt::format("bootstrap on rank {}: rank {} at {}:{} did not accept "
                                        "within {} ms",
                                        rank_, e.rank, e.host, e.port, timeout.count()),
                            "bootstrap", 0, e.rank);
      }
      hello h;
      h.rank = rank_;
      h.channel = c;
      h.nonce = nonce;
      if (!net::send_all(fd, &h, sizeof h, deadline)) {
        ::close(fd);
        throw timeout_error(fmt::format("bootstrap on rank {}: rank {} stalled", rank_, e.rank),
                            "bootstrap", 0, e.rank);
      }
      pairs_[static_cast<std::size_t>(e.rank)][static_cast<std::size_t>(c)] =
          std::make_unique<tcp_pair>(fd, e.rank, chunk_bytes_);
    }
  }
  accept_peers(expected, nonce, deadline, timeout);
  close_listener();
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = ~0u;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &ev);
  for (const endpoint& e : peers) {
    for (int c = 0; c < k_channels; ++c) {
      ev = epoll_event{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
      ev.data.u32 = static_cast<std::uint32_t>(e.rank);
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD,
                  pairs_[static_cast<std::size_t>(e.rank)][static_cast<std::size_t>(c)]->fd(), &ev);
    }
  }
}

// The TCP connections from higher ranks. Connections are read side by side (poll), so a
// stray one that never sends its hello, or closes, costs nothing but its own slot: at most
// 64 at once, each dropped after 5 s or a wrong hello (magic, nonce, rank, channel).
void tcp_device::accept_peers(int expected, std::uint64_t nonce, steady::time_point deadline,
                              std::chrono::milliseconds timeout) {
  struct pending {
    int fd;
    hello h;
    std::size_t got;
    steady::time_point since;
  };
  std::vector<pending> waiting;
  struct closer {
    std::vector<pending>& w;
    ~closer() {
      for (auto& p : w) ::close(p.fd);
    }
  } waiting_closer{waiting};
  net::set_nonblocking(listen_fd_);
  int accepted = 0;
  std::vector<pollfd> fds;
  while (accepted < expected) {
    if (steady::now() >= deadline) {
      throw timeout_error(fmt::format("bootstrap on rank {}: {} of {} connections from higher "
                                      "ranks arrived within {} ms",
                                      rank_, accepted, expected, timeout.count()),
                          "bootstrap", 0, -1);
    }
    fds.assign(1, pollfd{listen_fd_, POLLIN, 0});
    for (const auto& w : waiting) fds.push_back({w.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), net::ms_until(deadline, 100)) < 0 && errno != EINTR) {
      throw keel::backend_error(fmt::format("bootstrap: poll: {}", std::strerror(errno)));
    }
    const auto now = steady::now();
    if (fds[0].revents & POLLIN) {
      while (true) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN, or a transient error: poll again
        if (waiting.size() >= 64) {
          ::close(fd);
          continue;
        }
        net::set_nodelay(fd);
        waiting.push_back({fd, hello{}, 0, now});
      }
    }
    for (std::size_t i = waiting.size(); i-- > 0;) {
      pending& w = waiting[i];
      const ssize_t r =
          ::recv(w.fd, reinterpret_cast<char*>(&w.h) + w.got, sizeof w.h - w.got, MSG_DONTWAIT);
      if (r > 0) w.got += static_cast<std::size_t>(r);
      const bool gone =
          r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
      bool ours = false;
      if (!gone && w.got == sizeof w.h) {
        const hello& h = w.h;
        ours = h.magic == k_chunk_magic && h.nonce == nonce && h.rank > rank_ && h.rank < size_ &&
               h.channel >= 0 && h.channel < k_channels &&
               !pairs_[static_cast<std::size_t>(h.rank)][static_cast<std::size_t>(h.channel)];
        if (ours) {
          pairs_[static_cast<std::size_t>(h.rank)][static_cast<std::size_t>(h.channel)] =
              std::make_unique<tcp_pair>(w.fd, h.rank, chunk_bytes_);
          ++accepted;
        }
      }
      if (ours || gone || w.got == sizeof w.h || now - w.since > std::chrono::seconds(5)) {
        if (!ours) ::close(w.fd);  // a stray connection: not one of ours
        waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }
}

void tcp_device::wait(int timeout_ms) noexcept {
  epoll_event ev[16];
  const int n = ::epoll_wait(epoll_fd_, ev, 16, timeout_ms);
  for (int i = 0; i < n; ++i) {
    if (ev[i].data.u32 == ~0u) {
      std::uint64_t v;
      [[maybe_unused]] const ssize_t r = ::read(event_fd_, &v, sizeof v);
    }
  }
}

void tcp_device::drain() noexcept {
  int n = 0;
  do {
    epoll_event ev[16];
    n = ::epoll_wait(epoll_fd_, ev, 16, 0);
    for (int i = 0; i < n; ++i) {
      if (ev[i].data.u32 == ~0u) {
        std::uint64_t v;
        [[maybe_unused]] const ssize_t r = ::read(event_fd_, &v, sizeof v);
      }
    }
  } while (n == 16);
}

void tcp_device::wake() noexcept {
  if (event_fd_ < 0) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = ::write(event_fd_, &one, sizeof one);
}

void tcp_device::abort(int culprit, const std::string&) noexcept {
  chunk_header h;
  h.flags = k_flag_abort;
  set_abort_culprit(h, culprit);
  for (auto& channels : pairs_) {
    for (auto& p : channels) {
      if (p) p->abort(h);
    }
  }
}

}  // namespace keel::comm::detail
