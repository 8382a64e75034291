// The stores' shared rules and tcp_store's wire protocol (internal; the tests speak it to
// attack the server).
//
// Limits every store enforces: a key of at most k_max_key_bytes (a WAIT's key list counts
// as one key), a value of at most k_max_value_bytes. Counters made by add() are decimal
// text; parse_counter() accepts exactly what add() writes (an optional '-' and digits, in
// int64 range) and add_counter() checks the sum for overflow.
//
// tcp_store, little-endian:
//   on connect  server -> client  magic "KEELSTO1" (8) + server nonce (16)
//               client -> server  client nonce (16) + client_proof (32)
//               server -> client  verdict u8 (0 accepted, 1 refused); when accepted,
//                                 server_proof (32)
//   then        request  = cmd:u8 key_len:u32 value_len:u64 key value
//               response = status:u8 len:u64 payload (status 0: the result; 1: the request
//                          was refused, payload is the reason)
// The proofs are HMAC-SHA256 under the job's secret (empty without one) of a label and
// both nonces, so the secret never crosses the wire, a recorded handshake cannot be
// replayed, and a client also learns whether the server knows the secret (a squatter on
// MASTER_PORT cannot feed ranks false addresses). There is no encryption: anyone who can
// read the traffic can read the values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::comm::detail {

inline constexpr std::size_t k_max_key_bytes = std::size_t{1} << 20;     // 1 MiB
inline constexpr std::size_t k_max_value_bytes = std::size_t{64} << 20;  // 64 MiB

// The value of a counter, or nullopt when `text` is not one (full match, no sign '+', no
// spaces, no leading garbage).
std::optional<std::int64_t> parse_counter(std::string_view text) noexcept;
// current + delta; nullopt on overflow.
std::optional<std::int64_t> add_counter(std::int64_t current, std::int64_t delta) noexcept;
// Throws keel::invalid_argument when key or value exceed the limits above.
void check_store_limits(std::string_view op, std::size_t key_bytes, std::size_t value_bytes);

// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104).
using digest = std::array<std::uint8_t, 32>;
digest sha256(std::string_view data) noexcept;
digest hmac_sha256(std::string_view key, std::string_view message) noexcept;
// Compares without an early exit, so the time does not tell how much matched.
bool equal_digests(const std::uint8_t* a, const std::uint8_t* b, std::size_t n) noexcept;
// n bytes from getrandom(2) (std::random_device if that fails).
std::string random_bytes(std::size_t n);
// 2n lowercase hex digits of n random bytes.
std::string random_hex(std::size_t n);

namespace wire {

enum : std::uint8_t { k_set = 1, k_get = 2, k_add = 3, k_check = 4, k_wait = 5 };
enum : std::uint8_t { k_ok = 0, k_refused = 1 };

inline constexpr std::string_view k_magic = "KEELSTO1";
inline constexpr std::size_t k_nonce_bytes = 16;
inline constexpr std::size_t k_proof_bytes = 32;
inline constexpr std::size_t k_challenge_bytes = 8 + k_nonce_bytes;           // 24
inline constexpr std::size_t k_answer_bytes = k_nonce_bytes + k_proof_bytes;  // 48
inline constexpr std::size_t k_request_head_bytes = 13;
inline constexpr std::size_t k_response_head_bytes = 9;

digest client_proof(std::string_view secret, std::string_view server_nonce,
                    std::string_view client_nonce);
digest server_proof(std::string_view secret, std::string_view server_nonce,
                    std::string_view client_nonce);
// cmd key_len value_len key value, as the server expects it.
std::string encode_request(std::uint8_t cmd, std::string_view key, std::string_view value);

// A CHECK or WAIT request's key list: the keys joined by '\0', and back.
std::string join_keys(const std::vector<std::string>& keys);
std::vector<std::string> split_keys(const std::string& joined);
// "SET", "GET", "ADD", "CHECK", "WAIT" or "?".
const char* command_name(std::uint8_t cmd);
// A key as it may appear in a log line or an error: printable, at most 64 characters.
std::string shown(std::string_view key);

}  // namespace wire
}  // namespace keel::comm::detail
