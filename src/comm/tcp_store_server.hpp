// tcp_store's server (internal): a key-value server on one rank, a thread running an epoll
// loop. The wire format and the handshake are in store_protocol.hpp.
//
// The server reads each connection as a state machine (handshake answer, request head, key,
// value), receiving exactly the bytes of the current part, so nothing is buffered beyond
// what a validated head announced. A connection with a deferred GET/WAIT or an unsent reply
// is not read from until that is done: one request in flight and one reply queued per
// connection. Values are held by shared_ptr, so a reply does not copy them. Anything thrown
// while serving a connection drops that connection and nothing else.
//
// GET and WAIT replies are deferred until the keys exist; the client times out on its side
// and then drops the connection (the late reply must not be mistaken for the next one).
// Thread-safety: the constructor, destructor, stop_listening() and stats() may be called
// from any one thread while the loop runs on its own.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "keel/comm/store.hpp"
#include "store_protocol.hpp"

namespace keel::comm {

class tcp_store::server {
  using steady = std::chrono::steady_clock;

 public:
  server(const std::string& bind_address, std::uint16_t port, const tcp_store_options& o);
  ~server();
  std::uint16_t port() const { return port_; }

  void stop_listening();

  tcp_store_stats stats() const;

 private:
  enum class part { answer, head, key, value };
  struct conn {
    std::string peer;
    part reading = part::answer;
    steady::time_point handshake_deadline;
    std::string server_nonce;
    char head[detail::wire::k_answer_bytes] = {};  // the handshake answer, then each request head
    std::size_t head_got = 0;
    std::uint8_t cmd = 0;
    std::uint64_t key_len = 0, value_len = 0;
    std::string key, value;
    bool authenticated = false;
    bool waiting = false;  // a GET/WAIT is deferred
    bool close_after_reply = false;
    std::string out_head;
    std::shared_ptr<const std::string> out_body;
    std::size_t sent = 0;
    bool has_out() const { return sent < out_head.size() + (out_body ? out_body->size() : 0); }
  };
  struct waiter {
    int fd;
    std::uint8_t cmd;
    std::vector<std::string> keys;
  };

  void wake() noexcept;

  void close_fds() noexcept;

  void watch(int fd, std::uint32_t events, int op) noexcept;

  void loop() noexcept;

  static std::string describe_current();

  // One connection's event; nothing it throws gets further than this.
  void serve(int fd, std::uint32_t ev) noexcept;

  void accept_all();

  void housekeeping();

  // Logs why a client was dropped or refused, the first few times.
  void note_offense(const conn& c, const std::string& cause) noexcept;

  // Drops a connection for something it sent, logging the cause.
  void offense(int fd, const std::string& cause) noexcept;

  void drop(int fd, const char*) noexcept;

  static bool readable(const conn& c) { return !c.waiting && !c.has_out() && !c.close_after_reply; }

  void update_interest(int fd, const conn& c) noexcept;

  // Where the current part's bytes go and how many are still missing.
  std::pair<char*, std::size_t> target(conn& c);

  void read_from(int fd, conn& c);

  // Moves to the next part when the current one is complete; false once fd is dropped.
  bool advance(int fd, conn& c);

  bool finish_handshake(int fd, conn& c);

  bool has_all(const std::vector<std::string>& keys) const;

  // A well-formed request. Errors the client can act on are answered (status k_refused)
  // and the connection stays; false once fd is dropped.
  bool handle(int fd, conn& c);

  bool refuse(int fd, conn& c, const std::string& reason);

  bool reply(int fd, conn& c, std::shared_ptr<const std::string> payload);

  bool answer(const waiter& w);

  void wake_waiters();

  bool queue(int fd, conn& c, std::string head, std::shared_ptr<const std::string> body);

  // Sends what is queued; false once fd is dropped.
  bool flush(int fd, conn& c);

  tcp_store_options opts_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int epoll_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> unlisten_{false};
  std::mutex listen_mutex_;
  std::condition_variable listen_changed_;
  std::atomic<bool> listening_{false};
  std::optional<steady::time_point> accept_paused_until_;
  std::map<int, conn> conns_;
  std::size_t unauthenticated_ = 0;
  std::map<std::string, std::shared_ptr<const std::string>> data_;
  std::vector<waiter> waiters_;
  std::uint64_t offenses_ = 0;
  std::atomic<std::uint64_t> accepted_{0}, authenticated_{0}, refused_auth_{0},
      refused_capacity_{0}, dropped_{0}, rejected_{0};
  std::atomic<std::size_t> open_{0}, stored_bytes_{0};
  std::thread thread_;
};

}  // namespace keel::comm
