// Rendezvous stores: the key-value service ranks use to find each other (Gloo's Store,
// torch.distributed's TCPStore / FileStore).
//
// Operations: set(key, value) publishes bytes; get(key) waits until the key exists and
// returns its value; wait(keys) waits until all exist; add(key, delta) atomically adds to an
// integer counter (created at 0) and returns the new value; check(keys) tests without
// waiting. Every waiting call takes a timeout and throws comm::timeout_error (collective
// "store", naming the key) when it passes; transport failures throw comm::peer_error.
// Values are opaque bytes; counters made by add() are decimal text.
//
// Thread-safety: every store may be used from several threads at once.
//   memory_store  in-process (ranks as threads); the object is shared by reference.
//   file_store    a directory on a shared file system; one file per key, atomic rename,
//                 flock(2) for add().
//   tcp_store     one rank hosts the server (a thread with an epoll loop); every rank, the
//                 host included, is a client. Like torch's TCPStore the host must outlive
//                 the other ranks' use of the store.
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

class tcp_store final : public store {
 public:
  // is_host: start the server on `port` (0 picks a free one; see port()) and connect to it.
  // Otherwise connect to host:port, retrying until `timeout` passes (the host may start
  // later); throws timeout_error if it never answers. `timeout` also bounds set/add/check.
  tcp_store(const std::string& host, std::uint16_t port, bool is_host, duration timeout);
  ~tcp_store() override;
  tcp_store(const tcp_store&) = delete;
  tcp_store& operator=(const tcp_store&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  void set(const std::string& key, const bytes& value) override;
  bytes get(const std::string& key, duration timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, duration timeout) override;

 private:
  class server;
  bytes request(std::uint8_t cmd, const std::string& key, const bytes& value, duration timeout);
  std::unique_ptr<server> server_;
  std::mutex mutex_;  // one request at a time on the client socket
  int fd_ = -1;
  std::string host_;
  duration timeout_;  // for set/add/check, which never wait on other ranks
  std::uint16_t port_ = 0;
};

}  // namespace keel::comm
