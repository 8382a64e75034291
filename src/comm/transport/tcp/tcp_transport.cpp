#include "tcp_transport.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "../../net.hpp"

namespace keel::comm::detail {
namespace {

std::size_t padded(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

}  // namespace

tcp_pair::tcp_pair(int fd, int peer, std::size_t chunk_bytes)
    : fd_(fd), peer_(peer), in_(2 * (sizeof(chunk_header) + padded(chunk_bytes))) {
  net::set_nonblocking(fd_);
  net::set_nodelay(fd_);
}

tcp_pair::~tcp_pair() { ::close(fd_); }

bool tcp_pair::try_send(const chunk_header& h, const void* payload) {
  if (!drain()) return false;
  static const std::byte zeros[8] = {};
  const std::size_t pad = padded(h.nbytes) - h.nbytes;
  iovec iov[3] = {{const_cast<chunk_header*>(&h), sizeof h},
                  {const_cast<void*>(payload), h.nbytes},
                  {const_cast<std::byte*>(zeros), pad}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 3;
  const std::size_t total = sizeof h + h.nbytes + pad;
  ssize_t w = ::sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (w < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) broken("send");
    w = 0;
  }
  const auto sent = static_cast<std::size_t>(w);
  if (sent < total) {  // keep the rest; the caller's buffer may change after we return
    const auto* hp = reinterpret_cast<const std::byte*>(&h);
    const auto* pp = static_cast<const std::byte*>(payload);
    out_.clear();
    out_pos_ = 0;
    if (sent < sizeof h) {
      out_.insert(out_.end(), hp + sent, hp + sizeof h);
      if (h.nbytes) out_.insert(out_.end(), pp, pp + h.nbytes);
      out_.insert(out_.end(), zeros, zeros + pad);
    } else if (sent < sizeof h + h.nbytes) {
      out_.insert(out_.end(), pp + (sent - sizeof h), pp + h.nbytes);
      out_.insert(out_.end(), zeros, zeros + pad);
    } else {
      out_.insert(out_.end(), zeros + (sent - sizeof h - h.nbytes), zeros + pad);
    }
  }
  return true;
}

bool tcp_pair::flush() {
  const std::size_t before = out_.size() - out_pos_;
  drain();
  return out_.size() - out_pos_ != before;
}

const chunk_header* tcp_pair::peek(const std::byte** payload) {
  while (true) {
    const std::size_t avail = end_ - start_;
    if (avail >= sizeof(chunk_header)) {
      const auto* h = reinterpret_cast<const chunk_header*>(in_.data() + start_);
      if (h->magic != k_chunk_magic) {
        throw peer_gone(peer_, fmt::format("rank {} sent a corrupt stream (bad magic)", peer_));
      }
      if (avail >= sizeof(chunk_header) + padded(h->nbytes)) {
        *payload = in_.data() + start_ + sizeof(chunk_header);
        return h;
      }
      if (sizeof(chunk_header) + padded(h->nbytes) > in_.size() / 2) {
        throw peer_gone(peer_, fmt::format("rank {} sent a chunk of {} bytes, larger than the "
                                           "agreed chunk size",
                                           peer_, h->nbytes));
      }
    }
    if (start_ > 0 && in_.size() - start_ < sizeof(chunk_header) + max_needed()) {
      std::memmove(in_.data(), in_.data() + start_, end_ - start_);
      end_ -= start_;
      start_ = 0;
    }
    const ssize_t r = ::recv(fd_, in_.data() + end_, in_.size() - end_, MSG_DONTWAIT);
    if (r > 0) {
      end_ += static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) throw peer_gone(peer_, fmt::format("rank {} closed its connection", peer_));
    if (errno == EAGAIN || errno == EWOULDBLOCK) return nullptr;
    if (errno != EINTR) broken("recv");
  }
}

void tcp_pair::release() {
  const auto* h = reinterpret_cast<const chunk_header*>(in_.data() + start_);
  start_ += sizeof(chunk_header) + padded(h->nbytes);
  if (start_ == end_) start_ = end_ = 0;
}

void tcp_pair::abort(const chunk_header& h) noexcept {
  if (out_pos_ == out_.size()) {
    [[maybe_unused]] const ssize_t w = ::send(fd_, &h, sizeof h, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  ::shutdown(fd_, SHUT_RDWR);
}

std::size_t tcp_pair::max_needed() const {
  if (end_ - start_ >= sizeof(chunk_header)) {
    return padded(reinterpret_cast<const chunk_header*>(in_.data() + start_)->nbytes);
  }
  return in_.size() / 2 - sizeof(chunk_header);
}

bool tcp_pair::drain() {
  while (out_pos_ < out_.size()) {
    const ssize_t w =
        ::send(fd_, out_.data() + out_pos_, out_.size() - out_pos_, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w > 0) {
      out_pos_ += static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (w < 0 && errno == EINTR) continue;
    broken("send");
  }
  return true;
}

void tcp_pair::broken(const char* what) {
  throw peer_gone(peer_, fmt::format("connection to rank {} broken ({}: {})", peer_, what,
                                     std::strerror(errno)));
}

}  // namespace keel::comm::detail
