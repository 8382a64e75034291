// keel::comm vocabulary: element types, reductions, collectives, algorithms, transports.
//
// Names follow nccl-tests where it has one ("float", "half", "bfloat16", "int32", "sum"),
// and parse_* also accept the short forms keel uses elsewhere ("f32", "bf16", "i64", "u8").
// f16 and bf16 are stored as their 16-bit patterns (std::uint16_t) and reduced in f32.
// All functions are pure and thread-safe; parse_* throw keel::invalid_argument listing the
// accepted names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "keel/core/dtype.hpp"
#include "keel/core/float16.hpp"

namespace keel::comm {

// Element types are keel::dtype (keel/core/dtype.hpp); comm's buffers are those of
// k_all_dtypes below.
using keel::dtype;
enum class reduce_op : std::uint8_t { sum, prod, min, max, avg };
enum class collective : std::uint8_t {
  allreduce,
  reduce,
  broadcast,
  reduce_scatter,
  allgather,
  alltoall,
  sendrecv,
  barrier
};
// auto_select: the cost model decides. ring: chunked, pipelined ring. tree: NCCL's double
// binary tree (allreduce) or a pipelined binary tree (reduce, broadcast). rd: recursive
// doubling (Bruck for allgather on non-powers of two, dissemination for barrier).
// rabenseifner: recursive halving reduce-scatter + recursive doubling allgather.
// reducer: every rank sends its data to one designated reducer rank, which reduces and
// sends back (the SHARP / BytePS summation-service model). direct: every rank talks to
// every rank (pairwise exchange).
enum class algorithm : std::uint8_t { auto_select, ring, tree, rd, rabenseifner, reducer, direct };
enum class transport : std::uint8_t { auto_select, shm, tcp };

std::size_t dtype_size(dtype t) noexcept;
std::string_view to_string(dtype t) noexcept;       // nccl-tests name: "float", "half", ...
using keel::short_name;                             // "f32", "f16", ...
std::string_view to_string(reduce_op op) noexcept;  // "sum", ...
std::string_view to_string(collective c) noexcept;  // "allreduce", ...
std::string_view to_string(algorithm a) noexcept;   // "auto", "ring", ...
std::string_view to_string(transport t) noexcept;   // "auto", "shm", "tcp"

dtype parse_dtype(std::string_view name);
reduce_op parse_reduce_op(std::string_view name);
collective parse_collective(std::string_view name);
algorithm parse_algorithm(std::string_view name);
transport parse_transport(std::string_view name);

inline constexpr dtype k_all_dtypes[] = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16,
                                         dtype::i32, dtype::i64, dtype::u8};
inline constexpr reduce_op k_all_reduce_ops[] = {reduce_op::sum, reduce_op::prod, reduce_op::min,
                                                 reduce_op::max, reduce_op::avg};

// The algorithms that implement a collective, in the order `auto` considers them
// (empty for sendrecv, which has none).
std::vector<algorithm> algorithms_for(collective c);

// The 16-bit float conversions live in core (keel/core/float16.hpp).
using keel::bf16_to_float;
using keel::float_to_bf16;
using keel::float_to_half;
using keel::half_to_float;

}  // namespace keel::comm
