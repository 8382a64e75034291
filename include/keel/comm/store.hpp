// Rendezvous stores: the key-value service ranks use to find each other (Gloo's Store,
// torch.distributed's TCPStore / FileStore).
//
// Operations: set(key, value) publishes bytes; get(key) waits until the key exists and
// returns its value; wait(keys) waits until all exist; add(key, delta) atomically adds to an
// integer counter (created at 0) and returns the new value; check(keys) tests without
// waiting. Every waiting call takes a timeout and throws comm::timeout_error (collective
// "store", naming the key) when it passes; transport failures throw comm::peer_error.
// Values are opaque bytes; counters made by add() are decimal text. Limits, the same in
// every store: a key (a wait()'s or check()'s keys together) of at most 1 MiB, a value of at
// most 64 MiB; add() on a key whose value is not a counter, or a sum outside int64, throws
// keel::invalid_argument naming the key, as does a key or value over the limits.
//
// Thread-safety: every store may be used from several threads at once.
//   memory_store  in-process (ranks as threads); the object is shared by reference.
//   file_store    a directory on a shared file system; one file per key, atomic rename,
//                 flock(2) for add().
//   tcp_store     one rank hosts the server (a thread with an epoll loop); every rank, the
//                 host included, is a client. Like torch's TCPStore the host must outlive
//                 the other ranks' use of the store.
//
// tcp_store security (docs/comm.md, "Security of the bootstrap"): the server listens on the
// address the host name resolves to (loopback for a single-host job), not on every
// interface. Each connection first proves knowledge of the job's secret by an HMAC-SHA256
// challenge-response, in both directions; a client that fails is refused (auth_error on
// its side) and dropped. Without a secret the server only agrees to listen on a loopback
// address. Every length and value is checked before anything is buffered, each connection
// has at most one request in flight and one reply queued, connections (and unauthenticated
// ones, which must finish the handshake within 5 s) are capped, nothing a client sends can
// throw out of the server thread: the offending connection is dropped and the drop logged
// (KEEL_LOG=warn, the first few) and counted (stats()). stop_listening() closes the
// listening socket once bootstrap is done; connected clients keep being served. The
// traffic is not encrypted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace keel::comm {

using bytes = std::vector<std::uint8_t>;
using duration = std::chrono::milliseconds;

class store {
 public:
  virtual ~store() = default;
  virtual void set(const std::string& key, const bytes& value) = 0;
  virtual bytes get(const std::string& key, duration timeout) = 0;
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Default: polls check() with backoff; stores that can wait better override it.
  virtual void wait(const std::vector<std::string>& keys, duration timeout);
  // The rendezvous is over: a store that accepts new clients stops doing so (tcp_store's
  // host closes its listening socket); clients already connected keep being served.
  // Default: nothing to stop.
  virtual void stop_listening() {}

  void set_string(const std::string& key, const std::string& value) {
    set(key, bytes(value.begin(), value.end()));
  }
  std::string get_string(const std::string& key, duration timeout) {
    const bytes b = get(key, timeout);
    return std::string(b.begin(), b.end());
  }
};

class memory_store final : public store {
 public:
  void set(const std::string& key, const bytes& value) override;
  bytes get(const std::string& key, duration timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, duration timeout) override;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, bytes> data_;
};

class file_store final : public store {
 public:
  // Creates `directory` if needed. Throws keel::io_error when it cannot.
  explicit file_store(std::string directory);
  void set(const std::string& key, const bytes& value) override;
  bytes get(const std::string& key, duration timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;

 private:
  std::string path_of(const std::string& key) const;
  std::string directory_;
};

struct tcp_store_options {
  // Shared by every rank of the job (KEEL_STORE_SECRET under communicator::from_env);
  // empty: no secret, which the server accepts only on a loopback address.
  std::string secret;
  // Host only: the IPv4 address to listen on. Empty: the address `host` resolves to when
  // it belongs to this machine, else every interface (0.0.0.0, with a warning).
  std::string bind_address;
  std::size_t max_connections = 1024;  // open at once, the unauthenticated ones included
  std::size_t max_unauthenticated = 64;
  duration handshake_timeout = std::chrono::seconds(5);
  std::size_t max_total_bytes = std::size_t{256} << 20;  // keys + values held, all together
};

// What the host's server has seen (all zero on a client).
struct tcp_store_stats {
  std::uint64_t accepted = 0;          // connections accepted
  std::uint64_t authenticated = 0;     // ... that proved the secret
  std::uint64_t refused_auth = 0;      // ... that failed the handshake (or did not finish it)
  std::uint64_t refused_capacity = 0;  // closed at once: too many connections
  std::uint64_t dropped = 0;           // authenticated ones dropped for a malformed request
  std::uint64_t rejected = 0;          // well-formed requests answered with an error
  std::size_t open = 0;                // connections open now
  std::size_t stored_bytes = 0;        // keys + values held
  bool listening = false;
};

class tcp_store final : public store {
 public:
  // is_host: start the server on `port` (0 picks a free one; see port()) and connect to it.
  // Otherwise connect to host:port, retrying until `timeout` passes (the host may start
  // later); throws timeout_error if it never answers. `timeout` also bounds set/add/check.
  // Throws auth_error when the handshake fails (secrets differ), keel::invalid_argument when
  // a host without a secret would listen on a non-loopback address, keel::backend_error
  // when it cannot listen.
  tcp_store(const std::string& host, std::uint16_t port, bool is_host, duration timeout,
            const tcp_store_options& opts);
  tcp_store(const std::string& host, std::uint16_t port, bool is_host, duration timeout)
      : tcp_store(host, port, is_host, timeout, tcp_store_options{}) {}
  ~tcp_store() override;
  tcp_store(const tcp_store&) = delete;
  tcp_store& operator=(const tcp_store&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  // Host: the address the server listens on ("0.0.0.0" for every interface); else "".
  const std::string& bind_address() const noexcept { return bind_address_; }
  // Host: closes the listening socket (no new client can connect; connected ones keep being
  // served) and returns once it is closed. No-op on a client or when already closed.
  void stop_listening() override;
  tcp_store_stats stats() const;

  void set(const std::string& key, const bytes& value) override;
  bytes get(const std::string& key, duration timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, duration timeout) override;

 private:
  class server;
  bytes request(std::uint8_t cmd, const std::string& key, const bytes& value, duration timeout);
  int connect_and_authenticate(std::chrono::steady_clock::time_point deadline);
  std::unique_ptr<server> server_;
  std::mutex mutex_;  // one request at a time on the client socket
  int fd_ = -1;
  std::string host_;
  std::string secret_;
  std::string bind_address_;
  duration timeout_;  // for set/add/check, which never wait on other ranks
  std::uint16_t port_ = 0;
};

}  // namespace keel::comm
