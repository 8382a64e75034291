#include "tcp_store_server.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "keel/comm/error.hpp"
#include "keel/core/error.hpp"
#include "keel/core/log.hpp"
#include "net.hpp"

namespace keel::comm {
namespace {

namespace wire = detail::wire;
using wire::command_name;
using wire::shown;
using wire::split_keys;

constexpr std::size_t k_read_budget = 4u << 20;  // per connection per wake-up: fairness
constexpr int k_logged_drops = 8;

}  // namespace

tcp_store::server::server(const std::string& bind_address, std::uint16_t port,
                          const tcp_store_options& o)
    : opts_(o) {
  listen_fd_ = net::listen_on(bind_address, port, port_);
  net::set_nonblocking(listen_fd_);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (wake_fd_ < 0 || epoll_fd_ < 0) {
    close_fds();
    throw keel::backend_error(fmt::format("store: eventfd/epoll: {}", std::strerror(errno)));
  }
  watch(listen_fd_, EPOLLIN, EPOLL_CTL_ADD);
  watch(wake_fd_, EPOLLIN, EPOLL_CTL_ADD);
  listening_ = true;
  thread_ = std::thread([this] { loop(); });
}

tcp_store::server::~server() {
  stop_ = true;
  wake();
  thread_.join();
  for (auto& [fd, c] : conns_) ::close(fd);
  close_fds();
}

void tcp_store::server::stop_listening() {
  std::unique_lock lock(listen_mutex_);
  if (!listening_) return;
  unlisten_ = true;
  wake();
  listen_changed_.wait(lock, [&] { return !listening_; });
}

tcp_store_stats tcp_store::server::stats() const {
  tcp_store_stats s;
  s.accepted = accepted_;
  s.authenticated = authenticated_;
  s.refused_auth = refused_auth_;
  s.refused_capacity = refused_capacity_;
  s.dropped = dropped_;
  s.rejected = rejected_;
  s.open = open_;
  s.stored_bytes = stored_bytes_;
  s.listening = listening_;
  return s;
}

void tcp_store::server::wake() noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto rc = ::write(wake_fd_, &one, sizeof one);
}

void tcp_store::server::close_fds() noexcept {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  listen_fd_ = wake_fd_ = epoll_fd_ = -1;
}

void tcp_store::server::watch(int fd, std::uint32_t events, int op) noexcept {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  ::epoll_ctl(epoll_fd_, op, fd, &ev);
}

void tcp_store::server::loop() noexcept {
  epoll_event events[64];
  while (!stop_) {
    try {
      const int n = ::epoll_wait(epoll_fd_, events, 64, 250);
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_fd_) {
          std::uint64_t v;
          [[maybe_unused]] auto rc = ::read(wake_fd_, &v, sizeof v);
          continue;
        }
        if (fd == listen_fd_) {
          accept_all();
          continue;
        }
        serve(fd, events[i].events);
      }
      housekeeping();
    } catch (...) {
      // Only bad_alloc outside a connection's handling can get here: keep serving.
      KEEL_LOG_WARN("comm", "store: server loop: {}", describe_current());
    }
  }
}

std::string tcp_store::server::describe_current() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

void tcp_store::server::serve(int fd, std::uint32_t ev) noexcept {
  try {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    conn& c = it->second;
    if (ev & EPOLLERR) return drop(fd, nullptr);
    if (ev & EPOLLOUT) {
      if (!flush(fd, c)) return;
    }
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) {
      if (!readable(c)) {
        // The peer hung up while its request waits or its reply is queued.
        if (ev & (EPOLLHUP | EPOLLRDHUP)) drop(fd, nullptr);
        return;
      }
      read_from(fd, c);
    }
  } catch (...) {
    offense(fd, fmt::format("internal error serving it: {}", describe_current()));
  }
}

void tcp_store::server::accept_all() {
  while (true) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                             SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      // Out of descriptors or memory: stop accepting for a moment instead of spinning on
      // a listening socket that stays readable.
      KEEL_LOG_WARN("comm", "store: accept: {}; pausing for 100 ms", std::strerror(errno));
      watch(listen_fd_, 0, EPOLL_CTL_DEL);
      accept_paused_until_ = steady::now() + std::chrono::milliseconds(100);
      return;
    }
    ++accepted_;
    if (conns_.size() >= opts_.max_connections || unauthenticated_ >= opts_.max_unauthenticated) {
      ++refused_capacity_;
      if (refused_capacity_ <= k_logged_drops) {
        KEEL_LOG_WARN("comm",
                      "store: refused a connection from {}: {} open ({} unauthenticated), "
                      "the limit is {} ({})",
                      net::peer_name(fd), conns_.size(), unauthenticated_, opts_.max_connections,
                      opts_.max_unauthenticated);
      }
      ::close(fd);
      continue;
    }
    conn& c = conns_[fd];
    ++unauthenticated_;
    open_ = conns_.size();
    try {
      net::set_nodelay(fd);
      c.peer = net::peer_name(fd);
      c.handshake_deadline = steady::now() + opts_.handshake_timeout;
      c.server_nonce = detail::random_bytes(wire::k_nonce_bytes);
      watch(fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
      queue(fd, c, std::string(wire::k_magic) + c.server_nonce, nullptr);
    } catch (...) {
      drop(fd, nullptr);
    }
  }
}

void tcp_store::server::housekeeping() {
  const auto now = steady::now();
  if (accept_paused_until_ && now >= *accept_paused_until_ && listen_fd_ >= 0) {
    watch(listen_fd_, EPOLLIN, EPOLL_CTL_ADD);
    accept_paused_until_.reset();
  }
  if (unauthenticated_ > 0) {
    std::vector<int> late;
    for (const auto& [fd, c] : conns_) {
      if (!c.authenticated && !c.close_after_reply && now >= c.handshake_deadline)
        late.push_back(fd);
    }
    for (int fd : late) {
      offense(fd, fmt::format("no handshake within {} ms", opts_.handshake_timeout.count()));
    }
  }
  if (unlisten_) {
    std::lock_guard lock(listen_mutex_);
    if (listen_fd_ >= 0) {
      watch(listen_fd_, 0, EPOLL_CTL_DEL);
      ::close(listen_fd_);
      listen_fd_ = -1;
    }
    accept_paused_until_.reset();
    // Nobody may join any more: those still proving themselves go too.
    std::vector<int> pending;
    for (const auto& [fd, c] : conns_) {
      if (!c.authenticated) pending.push_back(fd);
    }
    for (int fd : pending) drop(fd, nullptr);
    unlisten_ = false;
    listening_ = false;
    listen_changed_.notify_all();
  }
}

void tcp_store::server::note_offense(const conn& c, const std::string& cause) noexcept {
  const std::uint64_t n = ++offenses_;
  if (n > k_logged_drops) return;
  try {
    KEEL_LOG_WARN("comm", "store: dropped the client at {}{}: {}", c.peer,
                  c.authenticated ? "" : " (not authenticated)", cause);
    if (n == k_logged_drops)
      KEEL_LOG_WARN("comm", "store: further dropped clients are only counted");
  } catch (...) {
  }
}

void tcp_store::server::offense(int fd, const std::string& cause) noexcept {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  if (it->second.authenticated) ++dropped_;
  note_offense(it->second, cause);
  drop(fd, nullptr);
}

void tcp_store::server::drop(int fd, const char*) noexcept {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  if (!it->second.authenticated) {
    --unauthenticated_;
    ++refused_auth_;  // whatever the way: it never proved the secret
  }
  watch(fd, 0, EPOLL_CTL_DEL);
  ::close(fd);
  conns_.erase(it);
  open_ = conns_.size();
  std::erase_if(waiters_, [fd](const waiter& w) { return w.fd == fd; });
}

void tcp_store::server::update_interest(int fd, const conn& c) noexcept {
  std::uint32_t ev = EPOLLRDHUP;
  if (readable(c)) ev |= EPOLLIN;
  if (c.has_out()) ev |= EPOLLOUT;
  watch(fd, ev, EPOLL_CTL_MOD);
}

std::pair<char*, std::size_t> tcp_store::server::target(conn& c) {
  switch (c.reading) {
    case part::answer: return {c.head + c.head_got, wire::k_answer_bytes - c.head_got};
    case part::head: return {c.head + c.head_got, wire::k_request_head_bytes - c.head_got};
    default: return {nullptr, 0};
  }
}

void tcp_store::server::read_from(int fd, conn& c) {
  char buffer[65536];
  std::size_t budget = k_read_budget;
  while (budget > 0 && readable(c)) {
    char* dst = nullptr;
    std::size_t want = 0;
    std::string* grow = nullptr;
    if (c.reading == part::answer || c.reading == part::head) {
      std::tie(dst, want) = target(c);
    } else {
      grow = c.reading == part::key ? &c.key : &c.value;
      const std::uint64_t total = c.reading == part::key ? c.key_len : c.value_len;
      want = static_cast<std::size_t>(std::min<std::uint64_t>(total - grow->size(), sizeof buffer));
      dst = buffer;
    }
    const ssize_t r = ::recv(fd, dst, want, 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return drop(fd, nullptr);  // the client closed (or reset)
    budget -= std::min(budget, static_cast<std::size_t>(r));
    if (grow) {
      grow->append(buffer, static_cast<std::size_t>(r));
    } else {
      c.head_got += static_cast<std::size_t>(r);
    }
    if (!advance(fd, c)) return;  // dropped
  }
}

bool tcp_store::server::advance(int fd, conn& c) {
  switch (c.reading) {
    case part::answer:
      if (c.head_got < wire::k_answer_bytes) return true;
      return finish_handshake(fd, c);
    case part::head: {
      if (c.head_got < wire::k_request_head_bytes) return true;
      c.head_got = 0;
      c.cmd = static_cast<std::uint8_t>(c.head[0]);
      std::uint32_t key_len;
      std::memcpy(&key_len, c.head + 1, 4);
      std::memcpy(&c.value_len, c.head + 5, 8);
      c.key_len = key_len;
      if (c.cmd < wire::k_set || c.cmd > wire::k_wait) {
        offense(fd, fmt::format("unknown command {}", c.cmd));
        return false;
      }
      if (c.key_len > detail::k_max_key_bytes) {
        offense(fd, fmt::format("{} with a {}-byte key (the limit is {})", command_name(c.cmd),
                                c.key_len, detail::k_max_key_bytes));
        return false;
      }
      if (c.value_len > detail::k_max_value_bytes) {
        offense(fd, fmt::format("{} with a {}-byte value (the limit is {} MiB)",
                                command_name(c.cmd), c.value_len, detail::k_max_value_bytes >> 20));
        return false;
      }
      // Room for what the head announced, no more (pages are touched as bytes arrive).
      c.key.clear();
      c.key.reserve(static_cast<std::size_t>(c.key_len));
      c.value.clear();
      c.value.reserve(static_cast<std::size_t>(c.value_len));
      c.reading = part::key;
      [[fallthrough]];
    }
    case part::key:
      if (c.key.size() < c.key_len) return true;
      c.reading = part::value;
      [[fallthrough]];
    case part::value:
      if (c.value.size() < c.value_len) return true;
      c.reading = part::head;
      return handle(fd, c);
  }
  return true;
}

bool tcp_store::server::finish_handshake(int fd, conn& c) {
  const std::string_view client_nonce(c.head, wire::k_nonce_bytes);
  const detail::digest expected = wire::client_proof(opts_.secret, c.server_nonce, client_nonce);
  const auto* got = reinterpret_cast<const std::uint8_t*>(c.head + wire::k_nonce_bytes);
  c.head_got = 0;
  if (!detail::equal_digests(expected.data(), got, expected.size())) {
    note_offense(c, "it does not know the job's secret (KEEL_STORE_SECRET)");
    c.close_after_reply = true;
    queue(fd, c, std::string(1, static_cast<char>(wire::k_refused)), nullptr);
    return false;
  }
  c.authenticated = true;
  --unauthenticated_;
  ++authenticated_;
  const detail::digest proof = wire::server_proof(opts_.secret, c.server_nonce, client_nonce);
  std::string verdict(1, static_cast<char>(wire::k_ok));
  verdict.append(reinterpret_cast<const char*>(proof.data()), proof.size());
  c.reading = part::head;
  return queue(fd, c, std::move(verdict), nullptr);
}

bool tcp_store::server::has_all(const std::vector<std::string>& keys) const {
  for (const auto& k : keys) {
    if (!data_.count(k)) return false;
  }
  return true;
}

bool tcp_store::server::handle(int fd, conn& c) {
  std::string key = std::move(c.key);
  std::string value = std::move(c.value);
  c.key = {};
  c.value = {};
  const bool takes_value = c.cmd == wire::k_set || c.cmd == wire::k_add;
  if (!takes_value && !value.empty()) {
    return refuse(
        fd, c, fmt::format("{} takes no value, got {} bytes", command_name(c.cmd), value.size()));
  }
  switch (c.cmd) {
    case wire::k_set: {
      const auto it = data_.find(key);
      const std::size_t old = it == data_.end() ? 0 : it->first.size() + it->second->size();
      const std::size_t added = key.size() + value.size();
      if (stored_bytes_ - old + added > opts_.max_total_bytes) {
        return refuse(fd, c,
                      fmt::format("SET '{}': {} more bytes would exceed the store's "
                                  "capacity of {} bytes ({} held)",
                                  shown(key), added, opts_.max_total_bytes, stored_bytes_.load()));
      }
      auto body = std::make_shared<const std::string>(std::move(value));
      if (it == data_.end()) {
        data_.emplace(std::move(key), std::move(body));
      } else {
        it->second = std::move(body);
      }
      stored_bytes_ = stored_bytes_ - old + added;
      if (!reply(fd, c, {})) return false;
      wake_waiters();
      return conns_.count(fd) != 0;
    }
    case wire::k_add: {
      if (value.size() != 8) {
        return refuse(
            fd, c,
            fmt::format("ADD '{}' needs an 8-byte delta, got {} bytes", shown(key), value.size()));
      }
      std::int64_t delta;
      std::memcpy(&delta, value.data(), 8);
      std::int64_t current = 0;
      const auto it = data_.find(key);
      if (it != data_.end()) {
        const auto parsed = detail::parse_counter(*it->second);
        if (!parsed) {
          return refuse(fd, c,
                        fmt::format("ADD '{}': its value ({} bytes) is not a counter", shown(key),
                                    it->second->size()));
        }
        current = *parsed;
      }
      const auto sum = detail::add_counter(current, delta);
      if (!sum) {
        return refuse(fd, c,
                      fmt::format("ADD '{}': {} + {} overflows a 64-bit counter", shown(key),
                                  current, delta));
      }
      auto text = std::make_shared<const std::string>(std::to_string(*sum));
      const std::size_t old = it == data_.end() ? 0 : it->first.size() + it->second->size();
      const std::size_t added = key.size() + text->size();
      if (stored_bytes_ - old + added > opts_.max_total_bytes) {
        return refuse(fd, c,
                      fmt::format("ADD '{}': the store is full ({} bytes)", shown(key),
                                  stored_bytes_.load()));
      }
      if (it == data_.end()) {
        data_.emplace(std::move(key), std::move(text));
      } else {
        it->second = std::move(text);
      }
      stored_bytes_ = stored_bytes_ - old + added;
      if (!reply(fd, c,
                 std::make_shared<const std::string>(reinterpret_cast<const char*>(&*sum), 8))) {
        return false;
      }
      wake_waiters();
      return conns_.count(fd) != 0;
    }
    case wire::k_check:
      return reply(fd, c,
                   std::make_shared<const std::string>(has_all(split_keys(key)) ? "1" : "0"));
    case wire::k_get:
    case wire::k_wait: {
      waiter w{fd, c.cmd, c.cmd == wire::k_get ? std::vector<std::string>{key} : split_keys(key)};
      if (has_all(w.keys)) return answer(w);
      c.waiting = true;
      waiters_.push_back(std::move(w));
      update_interest(fd, c);
      return true;
    }
    default: offense(fd, fmt::format("unknown command {}", c.cmd)); return false;
  }
}

bool tcp_store::server::refuse(int fd, conn& c, const std::string& reason) {
  ++rejected_;
  KEEL_LOG_DEBUG("comm", "store: refused a request from {}: {}", c.peer, reason);
  std::string head(1, static_cast<char>(wire::k_refused));
  const std::uint64_t len = reason.size();
  head.append(reinterpret_cast<const char*>(&len), 8);
  head += reason;
  return queue(fd, c, std::move(head), nullptr);
}

bool tcp_store::server::reply(int fd, conn& c, std::shared_ptr<const std::string> payload) {
  std::string head(1, static_cast<char>(wire::k_ok));
  const std::uint64_t len = payload ? payload->size() : 0;
  head.append(reinterpret_cast<const char*>(&len), 8);
  return queue(fd, c, std::move(head), std::move(payload));
}

bool tcp_store::server::answer(const waiter& w) {
  auto it = conns_.find(w.fd);
  if (it == conns_.end()) return false;
  it->second.waiting = false;
  std::shared_ptr<const std::string> body;
  if (w.cmd == wire::k_get) body = data_.at(w.keys[0]);
  return reply(w.fd, it->second, std::move(body));
}

void tcp_store::server::wake_waiters() {
  for (std::size_t i = 0; i < waiters_.size();) {
    if (has_all(waiters_[i].keys)) {
      const waiter w = std::move(waiters_[i]);
      waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
      answer(w);  // may drop w.fd, which erases its (no other) waiters
    } else {
      ++i;
    }
  }
}

bool tcp_store::server::queue(int fd, conn& c, std::string head,
                              std::shared_ptr<const std::string> body) {
  c.out_head = std::move(head);
  c.out_body = std::move(body);
  c.sent = 0;
  return flush(fd, c);
}

bool tcp_store::server::flush(int fd, conn& c) {
  while (c.has_out()) {
    const bool in_head = c.sent < c.out_head.size();
    const char* p =
        in_head ? c.out_head.data() + c.sent : c.out_body->data() + (c.sent - c.out_head.size());
    const std::size_t n =
        in_head ? c.out_head.size() - c.sent : c.out_body->size() - (c.sent - c.out_head.size());
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      c.sent += static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    drop(fd, nullptr);
    return false;
  }
  if (!c.has_out()) {
    c.out_head.clear();
    c.out_body.reset();
    c.sent = 0;
    if (c.close_after_reply) {
      drop(fd, nullptr);
      return false;
    }
  }
  update_interest(fd, c);
  return true;
}

}  // namespace keel::comm
