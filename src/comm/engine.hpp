// The schedule engine (internal): an algorithm is a list of point-to-point operations with
// data dependencies; the engine runs them all at once, chunk by chunk, without blocking.
//
// Operations on one (peer, channel, direction) run in the order they were added, and both
// ends add them in the same order (index = position in that queue, checked on arrival). An op
// may name gates: ops whose output it reads (or whose input it overwrites). Gating is by
// address: op X may process its bytes up to gate.ptr + gate.done - X.ptr, or everything once
// the gate is complete. That is what pipelines a ring — step s+1 forwards chunk c as soon
// as step s has reduced chunk c — and what keeps recursive doubling from overwriting data
// before it was sent. Gates and gated ops must point into the same buffer; a gate that
// covers memory before the gated op's start only releases it once complete (conservative).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "keel/comm/types.hpp"

namespace keel::comm::detail {

// The ops an op waits for, as the builders pass them: nothing, {a, b} (the overloads below),
// a std::vector<int>, or gate(x) (none when x < 0). Only valid during the call that adds the
// op (copied there).
struct gates_t {
  const int* p = nullptr;
  std::size_t n = 0;
  gates_t() = default;
  gates_t(const int* first, std::size_t count) : p(first), n(count) {}
  gates_t(const std::vector<int>& v) : p(v.data()), n(v.size()) {}
};

struct op {
  enum kind_t : std::uint8_t { send, recv, recv_reduce } kind = send;
  int peer = -1;
  int channel = 0;
  const std::byte* src = nullptr;  // send: data; recv_reduce: the local operand
  std::byte* dst = nullptr;        // recv, recv_reduce: where the result goes
  std::size_t bytes = 0;
  std::uint32_t gate_first = 0;  // its gates: schedule::gate_pool[gate_first, + gate_count)
  std::uint32_t gate_count = 0;
  // progress
  std::size_t done = 0;
  std::size_t chunk_pos = 0;  // bytes of the current incoming chunk already consumed
  bool started = false;
  std::uint32_t index = 0;  // its position in its queue, carried by its chunks

  bool complete() const noexcept { return started && done == bytes; }
  // As a gate: where its progress is measured (what a send read, what a receive wrote).
  const std::byte* gate_ptr() const noexcept { return kind == send ? src : dst; }
  // As a gated op: the memory that depends on the gates (a recv_reduce's local operand).
  const std::byte* wait_ptr() const noexcept { return kind == recv ? dst : src; }
};

// A schedule is reused from call to call (reset() keeps every buffer's capacity), so that a
// small collective allocates nothing.
class schedule {
 public:
  explicit schedule(int peers) { reset(peers); }
  // Empties the schedule for `peers` ranks.
  void reset(int peers);
  int send(int peer, int channel, const void* src, std::size_t bytes, gates_t gates = {});
  int recv(int peer, int channel, void* dst, std::size_t bytes, gates_t gates = {});
  // dst = local op incoming (dst may equal local).
  int recv_reduce(int peer, int channel, void* dst, const void* local, std::size_t bytes,
                  gates_t gates = {});
  int send(int peer, int channel, const void* src, std::size_t bytes,
           std::initializer_list<int> gates) {
    return send(peer, channel, src, bytes, gates_t(gates.begin(), gates.size()));
  }
  int recv(int peer, int channel, void* dst, std::size_t bytes, std::initializer_list<int> gates) {
    return recv(peer, channel, dst, bytes, gates_t(gates.begin(), gates.size()));
  }
  int recv_reduce(int peer, int channel, void* dst, const void* local, std::size_t bytes,
                  std::initializer_list<int> gates) {
    return recv_reduce(peer, channel, dst, local, bytes, gates_t(gates.begin(), gates.size()));
  }

  std::span<const int> gates_of(const op& o) const noexcept {
    return {gate_pool.data() + o.gate_first, o.gate_count};
  }

  std::vector<op> ops;
  std::vector<int> gate_pool;
  // Queues of op indices: index = (peer * k_channels + channel) * 2 + (recv ? 1 : 0).
  std::vector<std::vector<int>> queues;

 private:
  int add(op o, gates_t gates);
  std::vector<int> used_;  // queues with ops, to empty on reset
};

}  // namespace keel::comm::detail

namespace keel::comm {

// What one collective call is, for headers, checks and error messages.
struct call_info {
  collective coll = collective::allreduce;
  dtype type = dtype::u8;
  reduce_op op = reduce_op::sum;
  algorithm algo = algorithm::ring;
  std::uint64_t seq = 0;  // per tag
  std::uint32_t tag = 0;  // call_options::tag
  std::uint64_t count = 0;
  int root = -1;
  std::chrono::steady_clock::time_point deadline;  // unset: `timeout` after it first waits
  std::chrono::milliseconds timeout{0};
};

}  // namespace keel::comm
