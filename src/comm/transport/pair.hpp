// The transport-neutral connection to one peer on one channel (gloo's Pair), internal.
//
// A pair moves chunks: a 64-byte header (what the message belongs to) followed by at most
// chunk_bytes of payload. Sends and receives never block: try_send() returns false while
// there is no room (every shm slot full, a TCP socket still draining the previous chunk),
// peek() returns nullptr while no complete chunk has arrived. The engine drives many pairs
// at once and sleeps on their devices' wait primitive (device.hpp) in between. A device
// owns its pairs; one thread uses a pair at a time. A broken connection throws peer_gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace keel::comm::detail {

inline constexpr std::uint32_t k_chunk_magic = 0x6b65656c;  // "keel"
inline constexpr int k_channels = 2;                        // independent FIFOs per peer

// Flags of a chunk.
inline constexpr std::uint8_t k_flag_abort = 1;  // the sender aborted; see abort_culprit

struct chunk_header {
  std::uint32_t magic = k_chunk_magic;
  std::uint8_t coll = 0;     // keel::comm::collective
  std::uint8_t dtype = 0;    // keel::comm::dtype
  std::uint8_t op = 0;       // keel::comm::reduce_op
  std::uint8_t algo = 0;     // keel::comm::algorithm
  std::uint64_t seq = 0;     // the call's sequence number on its tag (per peer for send/recv)
  std::uint64_t count = 0;   // the collective's element count, as the caller passed it
  std::uint32_t nbytes = 0;  // payload bytes that follow
  std::uint32_t index = 0;   // index of the message within this pair's schedule, per direction
  std::uint32_t tag = 0;     // the call's tag (call_options::tag): which call in flight
  std::uint8_t flags = 0;
  std::uint8_t pad[3] = {};
  // A transport may reuse `offset` and `message_bytes` (16 bytes, 8-aligned) for the
  // payload of a whole small message, whose values they imply. An abort chunk (no payload)
  // carries the rank its sender blames in `offset` (abort_culprit).
  std::uint64_t offset = 0;         // byte offset of this chunk within its message
  std::uint64_t message_bytes = 0;  // total payload bytes of the message
  std::uint64_t reserved = 0;
};
static_assert(sizeof(chunk_header) == 64);

inline int abort_culprit(const chunk_header& h) noexcept {
  return static_cast<int>(static_cast<std::int64_t>(h.offset));
}
inline void set_abort_culprit(chunk_header& h, int culprit) noexcept {
  h.offset = static_cast<std::uint64_t>(static_cast<std::int64_t>(culprit));
}

// Thrown by a pair whose peer is gone (socket closed, process dead).
struct peer_gone : std::runtime_error {
  peer_gone(int r, const std::string& why) : std::runtime_error(why), rank(r) {}
  int rank;
};

class pair {
 public:
  virtual ~pair() = default;
  // Stages one chunk (header + h.nbytes payload bytes). False: no room yet, nothing done.
  virtual bool try_send(const chunk_header& h, const void* payload) = 0;
  // The oldest unreleased chunk, or nullptr. The payload stays valid until release().
  virtual const chunk_header* peek(const std::byte** payload) = 0;
  virtual void release() = 0;
  // Pushes bytes still queued for sending (TCP); true when something moved.
  virtual bool flush() { return false; }
};

}  // namespace keel::comm::detail
