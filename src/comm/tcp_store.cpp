// tcp_store: the client every rank holds, and on the host rank the server it starts
// (tcp_store_server.hpp). The wire format and the handshake are in store_protocol.hpp.
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "keel/comm/error.hpp"
#include "keel/comm/store.hpp"
#include "keel/core/error.hpp"
#include "keel/core/log.hpp"
#include "net.hpp"
#include "store_protocol.hpp"
#include "tcp_store_server.hpp"

namespace keel::comm {
namespace {

namespace wire = detail::wire;
using wire::command_name;
using wire::join_keys;
using wire::shown;

}  // namespace

// ------------------------------------------------------------------ client

tcp_store::tcp_store(const std::string& host, std::uint16_t port, bool is_host, duration timeout,
                     const tcp_store_options& opts)
    : secret_(opts.secret), timeout_(timeout) {
  if (timeout.count() <= 0) throw keel::invalid_argument("store: timeout must be positive");
  if (opts.max_connections < 1 || opts.max_unauthenticated < 1 ||
      opts.handshake_timeout.count() <= 0) {
    throw keel::invalid_argument("store: connection limits and handshake timeout must be positive");
  }
  host_ = host;
  if (is_host) {
    std::string bind = opts.bind_address;
    if (bind.empty()) {
      bind = net::resolve_ipv4(host);
      if (!net::is_local_address(bind)) {
        KEEL_LOG_WARN("comm",
                      "store: {} ({}) is not an address of this host; listening on "
                      "every interface (set KEEL_STORE_BIND to choose one)",
                      host, bind);
        bind = "0.0.0.0";
      }
    } else {
      bind = net::resolve_ipv4(bind);
    }
    if (opts.secret.empty() && !net::is_loopback(bind)) {
      throw keel::invalid_argument(fmt::format(
          "store: refusing to listen on {}:{} without a secret: any host that can reach it could "
          "join or disrupt the job. Set KEEL_STORE_SECRET to the same random string on every "
          "rank (e.g. export KEEL_STORE_SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n'))",
          bind, port));
    }
    server_ = std::make_unique<server>(bind, port, opts);
    port = server_->port();
    bind_address_ = bind;
    host_ = bind == "0.0.0.0" ? std::string("127.0.0.1") : bind;
  }
  port_ = port;
  fd_ = connect_and_authenticate(net::clock::now() + timeout);
  if (fd_ < 0) {
    throw timeout_error(fmt::format("store: no TCP store answered at {}:{} within {} ms", host,
                                    port, timeout.count()),
                        "store", 0, 0);
  }
}

tcp_store::~tcp_store() {
  if (fd_ >= 0) ::close(fd_);
}

void tcp_store::stop_listening() {
  if (server_) server_->stop_listening();
}

tcp_store_stats tcp_store::stats() const { return server_ ? server_->stats() : tcp_store_stats{}; }

int tcp_store::connect_and_authenticate(net::clock::time_point deadline) {
  while (true) {
    const int fd = net::connect_to(host_, port_, deadline);
    if (fd < 0) return -1;
    try {
      char challenge[wire::k_challenge_bytes];
      if (!net::recv_all(fd, challenge, sizeof challenge, deadline)) {
        ::close(fd);
        return -1;
      }
      if (std::string_view(challenge, wire::k_magic.size()) != wire::k_magic) {
        throw auth_error(fmt::format("store: the process at {}:{} is not a keel TCP store (it "
                                     "greeted with something else)",
                                     host_, port_),
                         "store", 0, 0);
      }
      const std::string server_nonce(challenge + wire::k_magic.size(), wire::k_nonce_bytes);
      const std::string client_nonce = detail::random_bytes(wire::k_nonce_bytes);
      const detail::digest proof = wire::client_proof(secret_, server_nonce, client_nonce);
      std::string answer = client_nonce;
      answer.append(reinterpret_cast<const char*>(proof.data()), proof.size());
      std::uint8_t verdict = 0;
      if (!net::send_all(fd, answer.data(), answer.size(), deadline) ||
          !net::recv_all(fd, &verdict, 1, deadline)) {
        ::close(fd);
        return -1;
      }
      if (verdict != wire::k_ok) {
        throw auth_error(fmt::format("store: the TCP store at {}:{} refused this rank: its "
                                     "KEEL_STORE_SECRET differs from rank 0's (or is set on one "
                                     "side only)",
                                     host_, port_),
                         "store", 0, 0);
      }
      std::uint8_t theirs[wire::k_proof_bytes];
      if (!net::recv_all(fd, theirs, sizeof theirs, deadline)) {
        ::close(fd);
        return -1;
      }
      const detail::digest expected = wire::server_proof(secret_, server_nonce, client_nonce);
      if (!detail::equal_digests(expected.data(), theirs, sizeof theirs)) {
        throw auth_error(fmt::format("store: the process at {}:{} does not know this job's "
                                     "KEEL_STORE_SECRET: it is not this job's store",
                                     host_, port_),
                         "store", 0, 0);
      }
      return fd;
    } catch (const keel::backend_error&) {
      // Closed before the handshake finished: the server is at its connection limit or was
      // just replaced. Try again while there is time.
      ::close(fd);
      if (net::clock::now() + std::chrono::milliseconds(10) >= deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
}

bytes tcp_store::request(std::uint8_t cmd, const std::string& key, const bytes& value,
                         duration timeout) {
  detail::check_store_limits(command_name(cmd), key.size(), value.size());
  std::lock_guard lock(mutex_);
  const auto deadline = net::clock::now() + timeout;
  if (fd_ < 0) {  // dropped after an earlier timeout
    fd_ = connect_and_authenticate(deadline);
    if (fd_ < 0) {
      throw timeout_error(fmt::format("store: cannot reconnect to {}:{}", host_, port_), "store", 0,
                          0);
    }
  }
  const std::string head = wire::encode_request(
      cmd, key, std::string_view(reinterpret_cast<const char*>(value.data()), value.size()));
  char response[wire::k_response_head_bytes];
  std::uint64_t len = 0;
  bytes payload;
  auto fail = [&](const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    throw peer_error(
        fmt::format("store: {} from the TCP store at {}:{} (rank 0)", why, host_, port_), "store",
        0, 0);
  };
  try {
    bool ok = net::send_all(fd_, head.data(), head.size(), deadline) &&
              net::recv_all(fd_, response, sizeof response, deadline);
    if (ok) {
      std::memcpy(&len, response + 1, 8);
      if (len > detail::k_max_value_bytes + 65536 ||
          (response[0] != wire::k_ok && response[0] != wire::k_refused)) {
        fail("a malformed reply");
      }
      payload.resize(static_cast<std::size_t>(len));
      ok = net::recv_all(fd_, payload.data(), payload.size(), deadline);
    }
    if (!ok) {
      ::close(fd_);
      fd_ = -1;
      throw timeout_error(
          fmt::format("store: key(s) {} did not appear within {} ms", shown(key), timeout.count()),
          "store", 0, 0);
    }
  } catch (const keel::backend_error& e) {
    ::close(fd_);
    fd_ = -1;
    throw peer_error(
        fmt::format("store: lost the TCP store at {}:{} (rank 0): {}", host_, port_, e.what()),
        "store", 0, 0);
  }
  if (response[0] == wire::k_refused) {
    throw keel::invalid_argument(
        fmt::format("store: {}", std::string(payload.begin(), payload.end())));
  }
  return payload;
}

void tcp_store::set(const std::string& key, const bytes& value) {
  request(wire::k_set, key, value, timeout_);
}

bytes tcp_store::get(const std::string& key, duration timeout) {
  return request(wire::k_get, key, {}, timeout);
}

std::int64_t tcp_store::add(const std::string& key, std::int64_t delta) {
  bytes d(8);
  std::memcpy(d.data(), &delta, 8);
  const bytes r = request(wire::k_add, key, d, timeout_);
  if (r.size() != 8) {
    throw peer_error(
        fmt::format("store: ADD '{}' got a {}-byte reply, expected 8", shown(key), r.size()),
        "store", 0, 0);
  }
  std::int64_t v = 0;
  std::memcpy(&v, r.data(), 8);
  return v;
}

bool tcp_store::check(const std::vector<std::string>& keys) {
  const bytes r = request(wire::k_check, join_keys(keys), {}, timeout_);
  return r.size() == 1 && r[0] == '1';
}

void tcp_store::wait(const std::vector<std::string>& keys, duration timeout) {
  request(wire::k_wait, join_keys(keys), {}, timeout);
}

}  // namespace keel::comm
