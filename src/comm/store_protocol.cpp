#include "store_protocol.hpp"

#include <sys/random.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <random>

#include "keel/core/error.hpp"

namespace keel::comm::detail {

std::optional<std::int64_t> parse_counter(std::string_view text) noexcept {
  if (text.empty() || text.front() == '+') return std::nullopt;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::int64_t> add_counter(std::int64_t current, std::int64_t delta) noexcept {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(current, delta, &sum)) return std::nullopt;
  return sum;
}

void check_store_limits(std::string_view op, std::size_t key_bytes, std::size_t value_bytes) {
  if (key_bytes > k_max_key_bytes) {
    throw keel::invalid_argument(fmt::format(
        "store {}: a key of {} bytes is over the {} byte limit", op, key_bytes, k_max_key_bytes));
  }
  if (value_bytes > k_max_value_bytes) {
    throw keel::invalid_argument(
        fmt::format("store {}: a value of {} bytes is over the {} MiB limit", op, value_bytes,
                    k_max_value_bytes >> 20));
  }
}

// ---- SHA-256

namespace {

constexpr std::uint32_t k_round[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

struct sha256_state {
  std::uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::uint8_t block[64] = {};
  std::size_t used = 0;
  std::uint64_t total = 0;

  void compress(const std::uint8_t* p) noexcept {
    std::uint32_t w[64];
    for (std::size_t i = 0; i < 16; ++i) {
      w[i] = static_cast<std::uint32_t>(p[4 * i]) << 24 |
             static_cast<std::uint32_t>(p[4 * i + 1]) << 16 |
             static_cast<std::uint32_t>(p[4 * i + 2]) << 8 | p[4 * i + 3];
    }
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const std::uint32_t ch = (e & f) ^ (~e & g);
      const std::uint32_t t1 = k + s1 + ch + k_round[i] + w[i];
      const std::uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const std::uint32_t t2 = s0 + maj;
      k = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
  }

  void update(std::string_view data) noexcept {
    const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
    std::size_t n = data.size();
    total += n;
    while (n > 0) {
      const std::size_t take = std::min(n, sizeof block - used);
      std::memcpy(block + used, p, take);
      used += take;
      p += take;
      n -= take;
      if (used == sizeof block) {
        compress(block);
        used = 0;
      }
    }
  }

  digest finish() noexcept {
    const std::uint64_t bits = total * 8;
    const std::uint8_t one = 0x80;
    update(std::string_view(reinterpret_cast<const char*>(&one), 1));
    const std::uint8_t zero = 0;
    while (used != 56) update(std::string_view(reinterpret_cast<const char*>(&zero), 1));
    std::uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
    update(std::string_view(reinterpret_cast<const char*>(length), 8));
    digest out;
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<std::uint8_t>(h[i] >> (24 - 8 * j));
    }
    return out;
  }
};

std::string_view view(const digest& d) {
  return std::string_view(reinterpret_cast<const char*>(d.data()), d.size());
}

}  // namespace

digest sha256(std::string_view data) noexcept {
  sha256_state s;
  s.update(data);
  return s.finish();
}

digest hmac_sha256(std::string_view key, std::string_view message) noexcept {
  std::uint8_t block[64] = {};
  if (key.size() > sizeof block) {
    const digest k = sha256(key);
    std::memcpy(block, k.data(), k.size());
  } else {
    std::memcpy(block, key.data(), key.size());
  }
  std::uint8_t ipad[64], opad[64];
  for (int i = 0; i < 64; ++i) {
    ipad[i] = block[i] ^ 0x36;
    opad[i] = block[i] ^ 0x5c;
  }
  sha256_state inner;
  inner.update(std::string_view(reinterpret_cast<const char*>(ipad), 64));
  inner.update(message);
  const digest inner_digest = inner.finish();
  sha256_state outer;
  outer.update(std::string_view(reinterpret_cast<const char*>(opad), 64));
  outer.update(view(inner_digest));
  return outer.finish();
}

bool equal_digests(const std::uint8_t* a, const std::uint8_t* b, std::size_t n) noexcept {
  volatile std::uint8_t diff = 0;
  for (std::size_t i = 0; i < n; ++i) diff = diff | (a[i] ^ b[i]);
  return diff == 0;
}

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::getrandom(out.data() + got, n - got, 0);
    if (r > 0) {
      got += static_cast<std::size_t>(r);
    } else if (r < 0 && errno != EINTR) {
      break;
    }
  }
  if (got < n) {
    std::random_device rd;
    for (std::size_t i = got; i < n; ++i) out[i] = static_cast<char>(rd());
  }
  return out;
}

std::string random_hex(std::size_t n) {
  const std::string raw = random_bytes(n);
  std::string out;
  out.reserve(2 * n);
  for (unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

namespace wire {

digest client_proof(std::string_view secret, std::string_view server_nonce,
                    std::string_view client_nonce) {
  std::string message = "keel-store client|";
  message.append(server_nonce).append(client_nonce);
  return hmac_sha256(secret, message);
}

digest server_proof(std::string_view secret, std::string_view server_nonce,
                    std::string_view client_nonce) {
  std::string message = "keel-store server|";
  message.append(client_nonce).append(server_nonce);
  return hmac_sha256(secret, message);
}

std::string encode_request(std::uint8_t cmd, std::string_view key, std::string_view value) {
  std::string out(k_request_head_bytes, '\0');
  out[0] = static_cast<char>(cmd);
  const std::uint32_t key_len = static_cast<std::uint32_t>(key.size());
  const std::uint64_t value_len = value.size();
  std::memcpy(out.data() + 1, &key_len, 4);
  std::memcpy(out.data() + 5, &value_len, 8);
  out.append(key).append(value);
  return out;
}

std::vector<std::string> split_keys(const std::string& joined) {
  std::vector<std::string> keys;
  std::size_t start = 0;
  while (start <= joined.size()) {
    const std::size_t end = joined.find('\0', start);
    keys.push_back(
        joined.substr(start, end == std::string::npos ? std::string::npos : end - start));
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

std::string shown(std::string_view key) {
  std::string out;
  for (unsigned char c : key.substr(0, 64)) {
    if (c == '\0')
      out += ',';
    else if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (key.size() > 64) out += "...";
  return out;
}

const char* command_name(std::uint8_t cmd) {
  switch (cmd) {
    case wire::k_set: return "SET";
    case wire::k_get: return "GET";
    case wire::k_add: return "ADD";
    case wire::k_check: return "CHECK";
    case wire::k_wait: return "WAIT";
    default: return "?";
  }
}

}  // namespace wire
}  // namespace keel::comm::detail
