// tcp_store: a key-value server on one rank (a thread running an epoll loop) and a client
// per rank. Wire format, little-endian:
//   request  = cmd:u8 key_len:u32 value_len:u64 key value
//   response = len:u64 payload
// GET and WAIT replies are deferred until the keys exist; the client times out on its side
// and then drops the connection (the late reply must not be mistaken for the next one).
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "keel/comm/error.hpp"
#include "keel/comm/store.hpp"
#include "keel/core/error.hpp"
#include "net.hpp"

namespace keel::comm {
namespace {

enum : std::uint8_t { k_set = 1, k_get = 2, k_add = 3, k_check = 4, k_wait = 5 };

std::vector<std::string> split_keys(const std::string& joined) {
  std::vector<std::string> keys;
  std::size_t start = 0;
  while (start <= joined.size()) {
    const std::size_t end = joined.find('\0', start);
    keys.push_back(joined.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return keys;
}

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i) out += '\0';
    out += keys[i];
  }
  return out;
}

}  // namespace

class tcp_store::server {
 public:
  explicit server(std::uint16_t port) {
    listen_fd_ = net::listen_on("0.0.0.0", port, port_);
    net::set_nonblocking(listen_fd_);
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    add_fd(listen_fd_);
    add_fd(wake_fd_);
    thread_ = std::thread([this] { loop(); });
  }
  ~server() {
    stop_ = true;
    const std::uint64_t one = 1;
    [[maybe_unused]] auto rc = ::write(wake_fd_, &one, sizeof one);
    thread_.join();
    for (auto& [fd, c] : conns_) ::close(fd);
    ::close(listen_fd_);
    ::close(wake_fd_);
    ::close(epoll_fd_);
  }
  std::uint16_t port() const { return port_; }

 private:
  struct conn {
    std::string in;
    std::string out;
  };
  struct waiter {
    int fd;
    std::uint8_t cmd;
    std::vector<std::string> keys;
  };

  void add_fd(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }

  void loop() {
    epoll_event events[64];
    while (!stop_) {
      const int n = ::epoll_wait(epoll_fd_, events, 64, 1000);
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_fd_) continue;
        if (fd == listen_fd_) {
          while (true) {
            const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (c < 0) break;
            net::set_nodelay(c);
            conns_[c];
            add_fd(c);
          }
          continue;
        }
        if (events[i].events & EPOLLOUT) flush(fd);
        if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_from(fd);
      }
    }
  }

  void drop(int fd) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    conns_.erase(fd);
    std::erase_if(waiters_, [fd](const waiter& w) { return w.fd == fd; });
  }

  void read_from(int fd) {
    char buffer[65536];
    while (true) {
      const ssize_t r = ::recv(fd, buffer, sizeof buffer, 0);
      if (r > 0) {
        conns_[fd].in.append(buffer, static_cast<std::size_t>(r));
        continue;
      }
      if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        drop(fd);
        return;
      }
      break;
    }
    std::string& in = conns_[fd].in;
    while (in.size() >= 13) {
      std::uint32_t key_len;
      std::uint64_t value_len;
      std::memcpy(&key_len, in.data() + 1, 4);
      std::memcpy(&value_len, in.data() + 5, 8);
      if (in.size() < 13 + key_len + value_len) break;
      const std::uint8_t cmd = static_cast<std::uint8_t>(in[0]);
      std::string key = in.substr(13, key_len);
      std::string value = in.substr(13 + key_len, value_len);
      in.erase(0, 13 + key_len + value_len);
      handle(fd, cmd, std::move(key), std::move(value));
      if (!conns_.count(fd)) return;
    }
  }

  bool has_all(const std::vector<std::string>& keys) const {
    for (const auto& k : keys) {
      if (!data_.count(k)) return false;
    }
    return true;
  }

  void handle(int fd, std::uint8_t cmd, std::string key, std::string value) {
    switch (cmd) {
      case k_set:
        data_[key] = std::move(value);
        reply(fd, "");
        wake_waiters();
        break;
      case k_add: {
        std::int64_t delta;
        std::memcpy(&delta, value.data(), 8);
        std::int64_t v = 0;
        if (auto it = data_.find(key); it != data_.end()) v = std::stoll(it->second);
        v += delta;
        data_[key] = std::to_string(v);
        reply(fd, std::string(reinterpret_cast<const char*>(&v), 8));
        wake_waiters();
        break;
      }
      case k_check:
        reply(fd, has_all(split_keys(key)) ? "1" : "0");
        break;
      case k_get:
      case k_wait: {
        waiter w{fd, cmd, cmd == k_get ? std::vector<std::string>{key} : split_keys(key)};
        if (has_all(w.keys)) {
          answer(w);
        } else {
          waiters_.push_back(std::move(w));
        }
        break;
      }
      default:
        drop(fd);
    }
  }

  void answer(const waiter& w) { reply(w.fd, w.cmd == k_get ? data_[w.keys[0]] : std::string()); }

  void wake_waiters() {
    for (std::size_t i = 0; i < waiters_.size();) {
      if (has_all(waiters_[i].keys)) {
        const waiter w = waiters_[i];
        waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
        answer(w);
      } else {
        ++i;
      }
    }
  }

  void reply(int fd, const std::string& payload) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    const std::uint64_t len = payload.size();
    it->second.out.append(reinterpret_cast<const char*>(&len), 8);
    it->second.out += payload;
    flush(fd);
  }

  void flush(int fd) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    std::string& out = it->second.out;
    while (!out.empty()) {
      const ssize_t w = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (w > 0) {
        out.erase(0, static_cast<std::size_t>(w));
        continue;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      drop(fd);
      return;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | (out.empty() ? 0u : static_cast<std::uint32_t>(EPOLLOUT));
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
  }

  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int epoll_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::map<int, conn> conns_;
  std::map<std::string, std::string> data_;
  std::vector<waiter> waiters_;
  std::thread thread_;
};

tcp_store::tcp_store(const std::string& host, std::uint16_t port, bool is_host, duration timeout)
    : timeout_(timeout) {
  if (is_host) {
    server_ = std::make_unique<server>(port);
    port = server_->port();
  }
  port_ = port;
  fd_ = net::connect_to(is_host ? std::string("127.0.0.1") : host, port,
                        net::clock::now() + timeout);
  if (fd_ < 0) {
    throw timeout_error(fmt::format("store: no TCP store answered at {}:{} within {} ms", host,
                                    port, timeout.count()),
                        "store", 0, 0);
  }
  host_ = is_host ? std::string("127.0.0.1") : host;
}

tcp_store::~tcp_store() {
  if (fd_ >= 0) ::close(fd_);
}

bytes tcp_store::request(std::uint8_t cmd, const std::string& key, const bytes& value,
                         duration timeout) {
  std::lock_guard lock(mutex_);
  const auto deadline = net::clock::now() + timeout;
  if (fd_ < 0) {  // dropped after an earlier timeout
    fd_ = net::connect_to(host_, port_, deadline);
    if (fd_ < 0) {
      throw timeout_error(fmt::format("store: cannot reconnect to {}:{}", host_, port_), "store",
                          0, 0);
    }
  }
  std::string head(13, '\0');
  head[0] = static_cast<char>(cmd);
  const std::uint32_t key_len = static_cast<std::uint32_t>(key.size());
  const std::uint64_t value_len = value.size();
  std::memcpy(head.data() + 1, &key_len, 4);
  std::memcpy(head.data() + 5, &value_len, 8);
  head += key;
  head.append(reinterpret_cast<const char*>(value.data()), value.size());
  std::uint64_t len = 0;
  bytes payload;
  try {
    bool ok = net::send_all(fd_, head.data(), head.size(), deadline) &&
              net::recv_all(fd_, &len, 8, deadline);
    if (ok) {
      payload.resize(len);
      ok = net::recv_all(fd_, payload.data(), len, deadline);
    }
    if (!ok) {
      ::close(fd_);
      fd_ = -1;
      std::string shown = key;
      std::replace(shown.begin(), shown.end(), '\0', ',');
      throw timeout_error(fmt::format("store: key(s) {} did not appear within {} ms", shown,
                                      timeout.count()),
                          "store", 0, 0);
    }
  } catch (const keel::backend_error& e) {
    ::close(fd_);
    fd_ = -1;
    throw peer_error(fmt::format("store: lost the TCP store at {}:{} (rank 0): {}", host_, port_,
                                 e.what()),
                     "store", 0, 0);
  }
  return payload;
}

void tcp_store::set(const std::string& key, const bytes& value) {
  request(k_set, key, value, timeout_);
}

bytes tcp_store::get(const std::string& key, duration timeout) {
  return request(k_get, key, {}, timeout);
}

std::int64_t tcp_store::add(const std::string& key, std::int64_t delta) {
  bytes d(8);
  std::memcpy(d.data(), &delta, 8);
  const bytes r = request(k_add, key, d, timeout_);
  std::int64_t v = 0;
  if (r.size() == 8) std::memcpy(&v, r.data(), 8);
  return v;
}

bool tcp_store::check(const std::vector<std::string>& keys) {
  const bytes r = request(k_check, join_keys(keys), {}, timeout_);
  return r.size() == 1 && r[0] == '1';
}

void tcp_store::wait(const std::vector<std::string>& keys, duration timeout) {
  request(k_wait, join_keys(keys), {}, timeout);
}

}  // namespace keel::comm
