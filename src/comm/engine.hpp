// The schedule engine (internal): an algorithm is a list of point-to-point operations with
// data dependencies; the engine runs them all at once, chunk by chunk, without blocking.
//
// Operations on one (peer, channel, direction) run in the order they were added, and both
// ends add them in the same order (tag = position in that queue, checked on arrival). An op
// may name gates: ops whose output it reads (or whose input it overwrites). Gating is by
// address: op X may process its bytes up to gate.ptr + gate.done - X.ptr, or everything once
// the gate is complete. That is what pipelines a ring — step s+1 forwards chunk c as soon
// as step s has reduced chunk c — and what keeps recursive doubling from overwriting data
// before it was sent. Gates and gated ops must point into the same buffer; a gate that
// covers memory before the gated op's start only releases it once complete (conservative).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "keel/comm/types.hpp"

namespace keel::comm::detail {

struct op {
  enum kind_t : std::uint8_t { send, recv, recv_reduce } kind = send;
  int peer = -1;
  int channel = 0;
  const std::byte* src = nullptr;  // send: data; recv_reduce: the local operand
  std::byte* dst = nullptr;        // recv, recv_reduce: where the result goes
  std::size_t bytes = 0;
  std::vector<int> gates;
  // progress
  std::size_t done = 0;
  std::size_t chunk_pos = 0;  // bytes of the current incoming chunk already consumed
  bool started = false;
  std::uint32_t tag = 0;

  bool complete() const noexcept { return started && done == bytes; }
  // As a gate: where its progress is measured (what a send read, what a receive wrote).
  const std::byte* gate_ptr() const noexcept { return kind == send ? src : dst; }
  // As a gated op: the memory that depends on the gates (a recv_reduce's local operand).
  const std::byte* wait_ptr() const noexcept { return kind == recv ? dst : src; }
};

class schedule {
 public:
  schedule(int peers) : peers_(peers) {}
  int send(int peer, int channel, const void* src, std::size_t bytes, std::vector<int> gates = {});
  int recv(int peer, int channel, void* dst, std::size_t bytes, std::vector<int> gates = {});
  // dst = local op incoming (dst may equal local).
  int recv_reduce(int peer, int channel, void* dst, const void* local, std::size_t bytes,
                  std::vector<int> gates = {});

  std::vector<op> ops;
  // Queues of op indices: index = (peer * k_channels + channel) * 2 + (recv ? 1 : 0).
  std::vector<std::vector<int>> queues;

 private:
  int add(op o);
  int peers_;
};

}  // namespace keel::comm::detail
