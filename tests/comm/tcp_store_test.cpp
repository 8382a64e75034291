// tcp_store under attack: the bad-input sweep of issue 15, as tests. A client that speaks
// the wire protocol by hand (store_protocol.hpp) sends malformed requests, the SET/ADD pair
// that used to abort rank 0, short and overflowing ADDs, a 1 GiB flood, and handshakes
// without the secret; after each, the store must still serve a legitimate client, and the
// server's process must not have grown. Also: SHA-256/HMAC known answers, the counter
// parser, the bind address, connection limits and stop_listening().
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "keel/comm/error.hpp"
#include "keel/comm/store.hpp"
#include "keel/core/error.hpp"
#include "keel/core/log.hpp"
#include "net.hpp"
#include "store_protocol.hpp"

namespace keel::comm {
namespace {

using namespace std::chrono_literals;
namespace wire = detail::wire;

const std::string k_secret = "0123456789abcdef0123456789abcdef";

std::string hex(const detail::digest& d) {
  std::string out;
  for (auto b : d) out += fmt::format("{:02x}", b);
  return out;
}

// A socket to the store, driven byte by byte.
class raw_client {
 public:
  explicit raw_client(std::uint16_t port, const std::string& host = "127.0.0.1") {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    timeval limit{5, 0};  // a send the server never drains fails instead of hanging the test
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  }
  ~raw_client() {
    if (fd_ >= 0) ::close(fd_);
  }
  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  // Sends everything or returns false (the server closed the connection).
  bool send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t w = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (w <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(w));
    }
    return true;
  }
  // Exactly n bytes, or nullopt when the connection closed or nothing came within `wait`.
  std::optional<std::string> recv(std::size_t n, std::chrono::milliseconds wait = 3s) {
    std::string out(n, '\0');
    std::size_t got = 0;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (got < n) {
      pollfd p{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        return std::nullopt;
      const ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
      if (r <= 0) return std::nullopt;
      got += static_cast<std::size_t>(r);
    }
    return out;
  }
  // Whether the server closes the connection within `wait` (reading and discarding).
  bool closed_by_server(std::chrono::milliseconds wait = 3s) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    char buffer[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t r = ::recv(fd_, buffer, sizeof buffer, 0);
      if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) return true;
    }
    return false;
  }
  // The handshake; returns the verdict byte (nullopt: no answer).
  std::optional<std::uint8_t> handshake(const std::string& secret) {
    const auto challenge = recv(wire::k_challenge_bytes);
    if (!challenge || challenge->substr(0, 8) != wire::k_magic) return std::nullopt;
    const std::string server_nonce = challenge->substr(8);
    const std::string client_nonce(wire::k_nonce_bytes, 'c');
    const auto proof = wire::client_proof(secret, server_nonce, client_nonce);
    if (!send(client_nonce +
              std::string(reinterpret_cast<const char*>(proof.data()), proof.size()))) {
      return std::nullopt;
    }
    const auto verdict = recv(1);
    if (!verdict) return std::nullopt;
    if (static_cast<std::uint8_t>((*verdict)[0]) == wire::k_ok) {
      const auto theirs = recv(wire::k_proof_bytes);
      const auto expected = wire::server_proof(secret, server_nonce, client_nonce);
      EXPECT_TRUE(theirs && std::memcmp(theirs->data(), expected.data(), expected.size()) == 0);
    }
    return static_cast<std::uint8_t>((*verdict)[0]);
  }
  // One reply: status and payload (nullopt: the connection closed instead).
  std::optional<std::pair<std::uint8_t, std::string>> reply(std::chrono::milliseconds wait = 3s) {
    const auto head = recv(wire::k_response_head_bytes, wait);
    if (!head) return std::nullopt;
    std::uint64_t len = 0;
    std::memcpy(&len, head->data() + 1, 8);
    if (len > (1u << 20)) return std::nullopt;
    const auto body =
        len ? recv(static_cast<std::size_t>(len), wait) : std::optional<std::string>("");
    if (!body) return std::nullopt;
    return std::make_pair(static_cast<std::uint8_t>((*head)[0]), *body);
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

std::string delta(std::int64_t d) { return std::string(reinterpret_cast<const char*>(&d), 8); }

// The store still does its job for a client with the secret.
void expect_serves(const tcp_store& host, const std::string& secret = k_secret) {
  tcp_store client("127.0.0.1", host.port(), false, 2s, {secret});
  client.set_string("alive", "yes");
  EXPECT_EQ(client.get_string("alive", 1s), "yes");
  EXPECT_EQ(client.add("alive-counter", 2) % 2, 0);
}

// VmRSS or VmHWM of this process, bytes.
std::size_t status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(std::strlen(field))) * 1024;
  }
  return 0;
}

// Captures the library's log lines (warn and up) while alive.
struct log_capture {
  std::mutex mutex;
  std::vector<std::string> lines;
  log_level saved = current_log_level();
  log_capture() {
    set_log_level(log_level::warn);
    set_log_sink([this](log_level, std::string_view, std::string_view message) {
      std::lock_guard lock(mutex);
      lines.emplace_back(message);
    });
  }
  ~log_capture() {
    set_log_sink({});
    set_log_level(saved);
  }
  bool contains(const std::string& text) {
    std::lock_guard lock(mutex);
    for (const auto& l : lines) {
      if (l.find(text) != std::string::npos) return true;
    }
    return false;
  }
};

TEST(CommStoreProtocol, Sha256AndHmacKnownAnswers) {
  // FIPS 180-4 examples and RFC 4231 test cases 2 and 6 (a key longer than a block).
  EXPECT_EQ(hex(detail::sha256("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(detail::sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(detail::sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(detail::hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hex(detail::hmac_sha256(std::string(131, '\xaa'),
                                    "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(CommStoreProtocol, CountersParseWholeAndAddsCheckOverflow) {
  EXPECT_EQ(detail::parse_counter("12"), 12);
  EXPECT_EQ(detail::parse_counter("-5"), -5);
  EXPECT_EQ(detail::parse_counter("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  for (const char* bad :
       {"", "abc", "12abc", " 1", "1 ", "+1", "0x10", "9223372036854775808", "-"}) {
    EXPECT_FALSE(detail::parse_counter(bad).has_value()) << bad;
  }
  EXPECT_FALSE(detail::add_counter(std::numeric_limits<std::int64_t>::max(), 1).has_value());
  EXPECT_FALSE(detail::add_counter(std::numeric_limits<std::int64_t>::min(), -1).has_value());
  EXPECT_EQ(detail::add_counter(-3, 5), 2);
}

// SET k=abc then ADD k 1 used to throw std::invalid_argument out of the server thread and
// terminate rank 0. Now every store refuses the ADD with keel::invalid_argument and goes on.
TEST(CommTcpStore, AddOnTextIsRefusedAndTheStoreSurvives) {
  tcp_store host("127.0.0.1", 0, true, 2s, {k_secret});
  tcp_store client("127.0.0.1", host.port(), false, 2s, {k_secret});
  memory_store memory;
  const auto dir =
      std::filesystem::temp_directory_path() / ("keel-store-attack-" + std::to_string(::getpid()));
  file_store files(dir.string());
  for (store* s : std::vector<store*>{&client, &memory, &files}) {
    s->set_string("k", "abc");
    try {
      s->add("k", 1);
      ADD_FAILURE() << "ADD on a text value succeeded";
    } catch (const keel::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("'k': its value (3 bytes) is not a counter"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(s->get_string("k", 1s), "abc");  // unchanged
    s->set_string("k", "12abc");               // a number with a tail is not one either
    EXPECT_THROW(s->add("k", 1), keel::invalid_argument);
    // Overflow is refused, the counter keeps its value.
    EXPECT_EQ(s->add("big", std::numeric_limits<std::int64_t>::max()),
              std::numeric_limits<std::int64_t>::max());
    try {
      s->add("big", 1);
      ADD_FAILURE() << "overflowing ADD succeeded";
    } catch (const keel::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("overflows a 64-bit counter"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(s->add("big", 0), std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(s->add("small", std::numeric_limits<std::int64_t>::min()),
              std::numeric_limits<std::int64_t>::min());
    EXPECT_THROW(s->add("small", -1), keel::invalid_argument);
  }
  std::filesystem::remove_all(dir);
  expect_serves(host);
  EXPECT_GE(host.stats().rejected, 4u);
}

TEST(CommTcpStore, ShortAndLongAddDeltasAreRefused) {
  tcp_store host("127.0.0.1", 0, true, 2s, {k_secret});
  raw_client c(host.port());
  ASSERT_EQ(c.handshake(k_secret), wire::k_ok);
  // The old server copied 8 bytes out of whatever value came.
  for (std::size_t n : {0, 1, 3, 7, 9, 64}) {
    ASSERT_TRUE(c.send(wire::encode_request(wire::k_add, "n", std::string(n, '\x01'))));
    const auto r = c.reply();
    ASSERT_TRUE(r) << n;
    EXPECT_EQ(r->first, wire::k_refused);
    EXPECT_NE(r->second.find(fmt::format("needs an 8-byte delta, got {} bytes", n)),
              std::string::npos)
        << r->second;
  }
  // The same connection goes on with well-formed requests.
  ASSERT_TRUE(c.send(wire::encode_request(wire::k_add, "n", delta(41))));
  auto r = c.reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, wire::k_ok);
  ASSERT_EQ(r->second.size(), 8u);
  std::int64_t v = 0;
  std::memcpy(&v, r->second.data(), 8);
  EXPECT_EQ(v, 41);
  ASSERT_TRUE(c.send(
      wire::encode_request(wire::k_add, "n", delta(std::numeric_limits<std::int64_t>::max()))));
  r = c.reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, wire::k_refused);
  EXPECT_NE(r->second.find("overflows"), std::string::npos) << r->second;
  // A GET/CHECK/WAIT carrying a value is refused, not misread.
  ASSERT_TRUE(c.send(wire::encode_request(wire::k_check, "n", "xyz")));
  r = c.reply();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, wire::k_refused);
  expect_serves(host);
}

// 1,000 malformed requests: random bytes before and instead of a handshake, and random
// frames (any command byte, any lengths, truncated bodies) after a valid one. None may take
// the server down or leave a connection behind; a legitimate client is served throughout.
TEST(CommTcpStore, ThousandRandomMalformedRequests) {
  log_capture logs;
  tcp_store_options o{k_secret};
  o.handshake_timeout = 300ms;
  tcp_store host("127.0.0.1", 0, true, 2s, o);
  tcp_store legit("127.0.0.1", host.port(), false, 2s, {k_secret});
  std::mt19937_64 rng(15);
  auto random_bytes = [&](std::size_t n) {
    std::string s(n, '\0');
    for (auto& ch : s) ch = static_cast<char>(rng());
    return s;
  };
  int unauthenticated = 0, framed = 0;
  for (int i = 0; i < 1000; ++i) {
    raw_client c(host.port());
    ASSERT_TRUE(c.connected()) << "request " << i;
    const int kind = static_cast<int>(rng() % 4);
    if (kind == 0) {
      // Garbage where the handshake answer should be.
      c.send(random_bytes(rng() % 200));
      ++unauthenticated;
    } else {
      ASSERT_EQ(c.handshake(k_secret), wire::k_ok) << "request " << i;
      std::string frame(13, '\0');
      const std::uint8_t cmd =
          kind == 1 ? static_cast<std::uint8_t>(rng()) : static_cast<std::uint8_t>(1 + rng() % 5);
      // Lengths: small and honest, small and lying, or absurd.
      const std::uint32_t key_len = rng() % 3 == 0 ? static_cast<std::uint32_t>(rng())
                                                   : static_cast<std::uint32_t>(rng() % 40);
      const std::uint64_t value_len = rng() % 3 == 0 ? rng() : rng() % 40;
      frame[0] = static_cast<char>(cmd);
      std::memcpy(frame.data() + 1, &key_len, 4);
      std::memcpy(frame.data() + 5, &value_len, 8);
      frame += random_bytes(rng() % 100);  // the body: too short, exact or too long
      c.send(frame);
      ++framed;
    }
    if (i % 100 == 0) EXPECT_EQ(legit.add("served", 1), i / 100 + 1);
  }
  EXPECT_EQ(unauthenticated + framed, 1000);
  expect_serves(host);
  // Every attacker's connection is gone once the silent ones time out.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (host.stats().open > 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  const tcp_store_stats s = host.stats();
  EXPECT_EQ(s.open, 2u);  // the host's own client and `legit`
  EXPECT_GE(s.refused_auth, static_cast<std::uint64_t>(unauthenticated));
  EXPECT_GE(s.accepted, 1003u);
  EXPECT_GT(s.dropped, 0u);
  EXPECT_TRUE(logs.contains("store: dropped the client at 127.0.0.1:")) << "causes are logged";
  EXPECT_TRUE(logs.contains("(not authenticated): it does not know the job's secret") ||
              logs.contains("with a") || logs.contains("unknown command"));
  EXPECT_TRUE(logs.contains("further dropped clients are only counted"));
}

// value_len was an unchecked u64: one client announcing and sending 1 GiB grew rank 0 by
// 1.8 GB. Now the head is refused before anything is buffered; without the secret nothing
// past the handshake is read at all; and many values under the limit stop at the store's
// capacity.
TEST(CommTcpStore, GibibyteFloodsDoNotGrowTheServer) {
  tcp_store_options o{k_secret};
  o.max_total_bytes = 32u << 20;
  tcp_store host("127.0.0.1", 0, true, 2s, o);
  const std::size_t baseline = status_bytes("VmRSS:");
  const bool hwm_reset = [] {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    return static_cast<bool>(clear);
  }();
  std::atomic<bool> sampling{true};
  std::atomic<std::size_t> peak{baseline};
  std::thread sampler([&] {
    while (sampling) {
      const std::size_t now = status_bytes("VmRSS:");
      if (now > peak) peak = now;
      std::this_thread::sleep_for(5ms);
    }
  });
  const std::string mib(1u << 20, 'x');
  constexpr std::size_t k_gib = std::size_t{1} << 30;
  auto stream = [&](raw_client& c, std::size_t total) {
    std::size_t sent = 0;
    while (sent < total && c.send(mib)) sent += mib.size();
    return sent;
  };
  std::size_t sent_unauthenticated = 0, sent_after_head = 0;
  {
    raw_client c(host.port());
    sent_unauthenticated = stream(c, k_gib);  // no handshake: 1 GiB of garbage
  }
  {
    raw_client c(host.port());
    ASSERT_EQ(c.handshake(k_secret), wire::k_ok);
    std::string head = wire::encode_request(wire::k_set, "flood", "");
    const std::uint64_t len = k_gib;
    std::memcpy(head.data() + 5, &len, 8);
    c.send(head);
    sent_after_head = stream(c, k_gib);
  }
  std::size_t accepted = 0, refused = 0;
  {
    raw_client c(host.port());
    ASSERT_EQ(c.handshake(k_secret), wire::k_ok);
    for (int i = 0; i < 1024; ++i) {  // 1 GiB in 1 MiB values under distinct keys
      ASSERT_TRUE(c.send(wire::encode_request(wire::k_set, fmt::format("v{}", i), mib)));
      const auto r = c.reply();
      ASSERT_TRUE(r) << i;
      (r->first == wire::k_ok ? accepted : refused) += 1;
      if (r->first != wire::k_ok) {
        EXPECT_NE(r->second.find("would exceed the store's capacity"), std::string::npos);
      }
    }
  }
  sampling = false;
  sampler.join();
  const std::size_t hwm = hwm_reset ? status_bytes("VmHWM:") : 0;
  const std::size_t growth =
      std::max(peak.load(), hwm) - std::min(baseline, std::max(peak.load(), hwm));
  std::cout << fmt::format(
      "[ flood    ] baseline RSS {:.1f} MB, peak {:.1f} MB (+{:.1f} MB); "
      "unauthenticated sender got {} MiB out, the 1 GiB SET {} MiB; "
      "{} of 1024 1 MiB SETs stored\n",
      baseline / 1e6, std::max(peak.load(), hwm) / 1e6, growth / 1e6, sent_unauthenticated >> 20,
      sent_after_head >> 20, accepted);
  bool bound_applies = true;
#if defined(__SANITIZE_ADDRESS__)
  // ASan's quarantine keeps the refused values' freed buffers resident (256 MB by default):
  // the bound holds with ASAN_OPTIONS=quarantine_size_mb=0, and in every other build.
  const char* asan = std::getenv("ASAN_OPTIONS");
  bound_applies = asan && std::strstr(asan, "quarantine_size_mb=0");
#elif defined(__SANITIZE_THREAD__)
  // TSan keeps shadow memory and a history of every byte touched: RSS says nothing there.
  bound_applies = false;
#endif
  if (bound_applies) EXPECT_LT(growth, 100u * 1000 * 1000);
  EXPECT_LT(sent_unauthenticated, k_gib) << "the server kept reading a client without the secret";
  EXPECT_LT(sent_after_head, k_gib) << "the server kept reading a value over the limit";
  EXPECT_GE(accepted, 30u);  // 32 MiB of capacity, keys included
  EXPECT_LE(accepted, 32u);
  EXPECT_EQ(refused, 1024u - accepted);
  const tcp_store_stats s = host.stats();
  EXPECT_LE(s.stored_bytes, o.max_total_bytes);
  EXPECT_GE(s.refused_auth, 1u);
  EXPECT_GE(s.dropped, 1u);
  expect_serves(host);
}

TEST(CommTcpStore, ClientsWithoutTheSecretAreRefused) {
  tcp_store_options o{k_secret};
  o.handshake_timeout = 300ms;
  tcp_store host("127.0.0.1", 0, true, 2s, o);
  for (const std::string& wrong : {std::string(), std::string("another secret, 16+ chars")}) {
    try {
      tcp_store intruder("127.0.0.1", host.port(), false, 2s, {wrong});
      ADD_FAILURE() << "a client with the wrong secret got in";
    } catch (const auth_error& e) {
      EXPECT_NE(std::string(e.what()).find("refused this rank: its KEEL_STORE_SECRET differs"),
                std::string::npos)
          << e.what();
      EXPECT_EQ(e.collective(), "store");
    }
  }
  // By hand: a forged proof gets the refusal byte, then the connection closes.
  raw_client c(host.port());
  EXPECT_EQ(c.handshake("not the secret at all"), wire::k_refused);
  EXPECT_TRUE(c.closed_by_server());
  // Requests without any handshake are never answered.
  raw_client silent(host.port());
  ASSERT_TRUE(silent.recv(wire::k_challenge_bytes));
  silent.send(wire::encode_request(wire::k_get, "alive", ""));
  EXPECT_TRUE(silent.closed_by_server());
  EXPECT_GE(host.stats().refused_auth, 4u);
  EXPECT_EQ(host.stats().authenticated, 1u);  // the host's own client
  expect_serves(host);
}

// A process squatting on the store's port cannot impersonate it: the client checks the
// server's proof too.
TEST(CommTcpStore, ClientRefusesAServerThatDoesNotKnowTheSecret) {
  for (const bool right_magic : {true, false}) {
    std::uint16_t port = 0;
    const int listener = net::listen_on("127.0.0.1", 0, port);
    std::thread fake([&] {
      const int fd = net::accept_until(listener, net::clock::now() + 5s);
      if (fd < 0) return;
      try {
        const std::string hello =
            std::string(right_magic ? "KEELSTO1" : "HTTP/1.1") + std::string(16, 'n');
        [[maybe_unused]] auto w = ::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL);
        char answer[48];
        if (net::recv_all(fd, answer, sizeof answer, net::clock::now() + 5s)) {
          const std::string accept_anything = std::string(1, '\0') + std::string(32, 'p');
          w = ::send(fd, accept_anything.data(), accept_anything.size(), MSG_NOSIGNAL);
          std::this_thread::sleep_for(200ms);
        }
      } catch (const std::exception&) {
        // the client hung up first
      }
      ::close(fd);
    });
    try {
      tcp_store victim("127.0.0.1", port, false, 2s, {k_secret});
      ADD_FAILURE() << "the client trusted a fake store";
    } catch (const auth_error& e) {
      const std::string expected =
          right_magic ? "does not know this job's KEEL_STORE_SECRET" : "is not a keel TCP store";
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    } catch (const keel::backend_error&) {
      // the fake closed first on a slow machine: also not trusted
    }
    fake.join();
    ::close(listener);
  }
}

TEST(CommTcpStore, ListensOnMasterAddrOnlyAndNeedsASecretBeyondLoopback) {
  {
    tcp_store host("127.0.0.1", 0, true, 2s);
    EXPECT_EQ(host.bind_address(), "127.0.0.1");
    // 127.0.0.2 is this machine too, but not the address the store listens on.
    raw_client other(host.port(), "127.0.0.2");
    EXPECT_FALSE(other.connected());
    const std::string outside = net::local_address_towards("192.0.2.1");
    if (outside != "127.0.0.1") {
      raw_client lan(host.port(), outside);
      EXPECT_FALSE(lan.connected()) << "reachable at " << outside;
    }
  }
  tcp_store_options everywhere;
  everywhere.bind_address = "0.0.0.0";
  try {
    tcp_store host("127.0.0.1", 0, true, 2s, everywhere);
    ADD_FAILURE() << "listened on every interface without a secret";
  } catch (const keel::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("without a secret"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("KEEL_STORE_SECRET"), std::string::npos) << e.what();
  }
  everywhere.secret = k_secret;
  tcp_store host("127.0.0.1", 0, true, 2s, everywhere);
  EXPECT_EQ(host.bind_address(), "0.0.0.0");
  expect_serves(host);
}

TEST(CommTcpStore, ConnectionsAreCappedAndSilentOnesTimeOut) {
  tcp_store_options o{k_secret};
  o.max_connections = 8;
  o.max_unauthenticated = 4;
  o.handshake_timeout = 300ms;
  tcp_store host("127.0.0.1", 0, true, 2s, o);
  std::vector<std::unique_ptr<raw_client>> squatters;
  for (int i = 0; i < 20; ++i) squatters.push_back(std::make_unique<raw_client>(host.port()));
  // At most 4 wait for a handshake; the others were closed at once.
  const auto accepted_by = std::chrono::steady_clock::now() + 3s;
  while (host.stats().accepted < 21 && std::chrono::steady_clock::now() < accepted_by) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_LE(host.stats().open, 5u);  // 4 + the host's own client
  EXPECT_GE(host.stats().refused_capacity, 15u);
  // A rank arriving now gets in once the silent ones have timed out (its client retries).
  const auto t0 = std::chrono::steady_clock::now();
  tcp_store late("127.0.0.1", host.port(), false, 5s, {k_secret});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  late.set_string("in", "1");
  for (auto& s : squatters) EXPECT_TRUE(s->closed_by_server(1s));
  expect_serves(host);
}

TEST(CommTcpStore, StopListeningKeepsConnectedClients) {
  tcp_store host("127.0.0.1", 0, true, 2s, {k_secret});
  tcp_store client("127.0.0.1", host.port(), false, 2s, {k_secret});
  EXPECT_TRUE(host.stats().listening);
  host.stop_listening();
  host.stop_listening();    // idempotent
  client.stop_listening();  // no-op on a client
  EXPECT_FALSE(host.stats().listening);
  client.set_string("after", "bootstrap");
  EXPECT_EQ(host.get_string("after", 1s), "bootstrap");
  EXPECT_THROW(tcp_store("127.0.0.1", host.port(), false, 300ms, {k_secret}), timeout_error);
}

TEST(CommTcpStore, OversizedKeysAndValuesAreRefusedBeforeSending) {
  tcp_store host("127.0.0.1", 0, true, 20s, {k_secret});
  memory_store memory;
  for (store* s : std::vector<store*>{&host, &memory}) {
    EXPECT_THROW(s->set(std::string((1u << 20) + 1, 'k'), {}), keel::invalid_argument);
    EXPECT_THROW(s->set("v", bytes((64u << 20) + 1)), keel::invalid_argument);
  }
  host.set("max", bytes(64u << 20, 7));
  EXPECT_EQ(host.get("max", 5s).size(), 64u << 20);
  // On the wire, the server drops a head announcing more.
  raw_client c(host.port());
  ASSERT_EQ(c.handshake(k_secret), wire::k_ok);
  std::string head = wire::encode_request(wire::k_set, "v", "");
  const std::uint64_t len = (64u << 20) + 1;
  std::memcpy(head.data() + 5, &len, 8);
  c.send(head);
  EXPECT_TRUE(c.closed_by_server());
  expect_serves(host);
}

}  // namespace
}  // namespace keel::comm
