// run_collective — any collective by its enum, the one dispatch that `keel comm verify`,
// `keel comm bench` and the self-test share.
//
// Buffer shapes follow communicator.hpp: input_count() and output_count() say how many
// elements `in` and `out` hold for a per-rank `count`. collective::sendrecv is a ring of
// point-to-point messages (send `in` to rank+1, receive `out` from rank-1; even ranks send
// first), nothing on one rank; collective::barrier ignores the buffers. Collective: every
// rank calls it with the same collective, count, dtype, reduction and root. Throws what the
// communicator's call throws. Stateless; thread-safety is the communicator's.
#pragma once

#include <cstddef>

#include "keel/comm/communicator.hpp"

namespace keel::comm {

// True for allreduce, reduce and reduce_scatter (the collectives that take a reduce_op).
bool is_reduction(collective c) noexcept;
// True when count is per rank block (reduce_scatter, allgather, alltoall).
bool is_per_rank(collective c) noexcept;
// Elements of the input and output buffers of a call with per-rank `count` on `size` ranks.
std::size_t input_count(collective c, std::size_t count, int size) noexcept;
std::size_t output_count(collective c, std::size_t count, int size) noexcept;

void run_collective(communicator& c, collective coll, const void* in, void* out, std::size_t count,
                    dtype type, reduce_op op, int root, const call_options& o = {});

}  // namespace keel::comm
