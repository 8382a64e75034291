// The schedule: ops, gates and per-(peer, channel, direction) queues (progress.cpp runs it).
#include "engine.hpp"

#include "transport/pair.hpp"

namespace keel::comm::detail {

void schedule::reset(int peers) {
  ops.clear();
  gate_pool.clear();
  for (int q : used_) queues[static_cast<std::size_t>(q)].clear();
  used_.clear();
  const std::size_t n = static_cast<std::size_t>(peers) * k_channels * 2;
  if (queues.size() != n) {
    queues.clear();
    queues.resize(n);
  }
}

int schedule::add(op o, gates_t gates) {
  const std::size_t q = (static_cast<std::size_t>(o.peer) * k_channels + o.channel) * 2 +
                        (o.kind == op::send ? 0 : 1);
  if (queues[q].empty()) used_.push_back(static_cast<int>(q));
  o.index = static_cast<std::uint32_t>(queues[q].size());
  o.gate_first = static_cast<std::uint32_t>(gate_pool.size());
  o.gate_count = static_cast<std::uint32_t>(gates.n);
  gate_pool.insert(gate_pool.end(), gates.p, gates.p + gates.n);
  queues[q].push_back(static_cast<int>(ops.size()));
  ops.push_back(o);
  return static_cast<int>(ops.size()) - 1;
}

int schedule::send(int peer, int channel, const void* src, std::size_t bytes, gates_t gates) {
  op o;
  o.kind = op::send;
  o.peer = peer;
  o.channel = channel;
  o.src = static_cast<const std::byte*>(src);
  o.bytes = bytes;
  return add(o, gates);
}

int schedule::recv(int peer, int channel, void* dst, std::size_t bytes, gates_t gates) {
  op o;
  o.kind = op::recv;
  o.peer = peer;
  o.channel = channel;
  o.dst = static_cast<std::byte*>(dst);
  o.bytes = bytes;
  return add(o, gates);
}

int schedule::recv_reduce(int peer, int channel, void* dst, const void* local, std::size_t bytes,
                          gates_t gates) {
  op o;
  o.kind = op::recv_reduce;
  o.peer = peer;
  o.channel = channel;
  o.src = static_cast<const std::byte*>(local);
  o.dst = static_cast<std::byte*>(dst);
  o.bytes = bytes;
  return add(o, gates);
}

}  // namespace keel::comm::detail
