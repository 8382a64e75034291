#include "keel/comm/dispatch.hpp"

namespace keel::comm {

bool is_reduction(collective c) noexcept {
  return c == collective::allreduce || c == collective::reduce || c == collective::reduce_scatter;
}

bool is_per_rank(collective c) noexcept {
  return c == collective::reduce_scatter || c == collective::allgather || c == collective::alltoall;
}

std::size_t input_count(collective c, std::size_t count, int size) noexcept {
  switch (c) {
    case collective::reduce_scatter:
    case collective::alltoall: return count * static_cast<std::size_t>(size);
    default: return count;
  }
}

std::size_t output_count(collective c, std::size_t count, int size) noexcept {
  switch (c) {
    case collective::allgather:
    case collective::alltoall: return count * static_cast<std::size_t>(size);
    default: return count;
  }
}

void run_collective(communicator& c, collective coll, const void* in, void* out, std::size_t count,
                    dtype type, reduce_op op, int root, const call_options& o) {
  switch (coll) {
    case collective::allreduce: c.allreduce(in, out, count, type, op, o); break;
    case collective::reduce: c.reduce(in, out, count, type, op, root, o); break;
    case collective::broadcast: c.broadcast(in, out, count, type, root, o); break;
    case collective::reduce_scatter: c.reduce_scatter(in, out, count, type, op, o); break;
    case collective::allgather: c.allgather(in, out, count, type, o); break;
    case collective::alltoall: c.alltoall(in, out, count, type, o); break;
    case collective::barrier: c.barrier(o); break;
    case collective::sendrecv: {
      const int n = c.size(), me = c.rank();
      if (n == 1) break;
      if (me % 2 == 0) {
        c.send(in, count, type, (me + 1) % n, o);
        c.recv(out, count, type, (me - 1 + n) % n, o);
      } else {
        c.recv(out, count, type, (me - 1 + n) % n, o);
        c.send(in, count, type, (me + 1) % n, o);
      }
      break;
    }
  }
}

}  // namespace keel::comm
