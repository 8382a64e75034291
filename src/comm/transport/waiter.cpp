#include "waiter.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "keel/core/error.hpp"

namespace keel::comm::detail {

waiter::waiter(std::vector<device*> devices) : devices_(std::move(devices)) {
  if (devices_.size() > 32) throw keel::invalid_argument("waiter: more than 32 devices");
  if (devices_.size() < 2) return;
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    throw keel::backend_error(fmt::format("epoll_create1: {}", std::strerror(errno)));
  }
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const int fd = devices_[i]->wait_fd();
    if (fd < 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;  // level-triggered: drain() consumes what made it readable
    ev.data.u32 = static_cast<std::uint32_t>(i);
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      const int e = errno;
      ::close(epoll_fd_);
      throw keel::backend_error(fmt::format("epoll_ctl: {}", std::strerror(e)));
    }
  }
}

waiter::~waiter() {
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

bool waiter::wait(std::uint32_t used, int timeout_ms, const std::function<bool()>& recheck) {
  int count = 0;
  device* only = nullptr;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (used & (1u << i)) {
      ++count;
      only = devices_[i];
    }
  }
  if (count == 0) return false;
  if (count == 1) {
    if (only->arm(wake_via::native) && recheck()) {
      only->disarm();
      return true;
    }
    only->wait(timeout_ms);
    only->disarm();
    return false;
  }
  bool check = false;
  bool polls = false;  // a used device cannot wake us through a descriptor
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (!(used & (1u << i))) continue;
    check |= devices_[i]->arm(wake_via::fd);
    polls |= devices_[i]->wait_fd() < 0;
  }
  auto disarm_all = [&] {
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      if (used & (1u << i)) devices_[i]->disarm();
    }
  };
  if (check && recheck()) {
    disarm_all();
    return true;
  }
  epoll_event ev[8];
  const int n = ::epoll_wait(epoll_fd_, ev, 8, polls ? 1 : timeout_ms);
  for (int k = 0; k < n; ++k) devices_[ev[k].data.u32]->drain();
  disarm_all();
  return false;
}

}  // namespace keel::comm::detail
