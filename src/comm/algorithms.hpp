// Schedule builders, one per (collective, algorithm) (internal). Each adds this rank's part
// of the algorithm to a schedule; every rank builds the mirror image, so per-pair message
// order agrees. Buffers are byte pointers; `elem` is the element size; counts are in
// elements. Local copies that must happen before (pre_copy) or after the run are listed in
// `after` and done by the caller.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "engine.hpp"

namespace keel::comm::detail {

struct local_copy {
  std::byte* dst;
  const std::byte* src;
  std::size_t bytes;
};

struct plan {
  std::vector<local_copy> before;  // done before the schedule runs
  std::vector<local_copy> after;   // done after it completed
};

// NCCL's binary tree (ncclGetBtree) and double binary tree (ncclGetDtree): parent and up to
// two children of `rank` in tree `tree` (0 or 1); -1 for none.
struct tree_links {
  int parent = -1;
  int child0 = -1;
  int child1 = -1;
};
tree_links btree(int n, int rank);
tree_links dtree(int n, int rank, int tree);

struct args {
  int rank, n;
  const std::byte* in;
  std::byte* out;
  std::size_t count;  // elements (per rank block for reduce_scatter/allgather/alltoall)
  std::size_t elem;
  int root;
  std::function<std::byte*(std::size_t, int)> scratch;  // (bytes, which) -> buffer
};

plan allreduce_ring(schedule& s, const args& a);
plan allreduce_tree(schedule& s, const args& a);
plan allreduce_rd(schedule& s, const args& a);
plan allreduce_rabenseifner(schedule& s, const args& a);
plan allreduce_reducer(schedule& s, const args& a);  // reducer rank = a.root

plan reduce_ring(schedule& s, const args& a);
plan reduce_tree(schedule& s, const args& a);
plan reduce_reducer(schedule& s, const args& a);

plan broadcast_ring(schedule& s, const args& a);
plan broadcast_tree(schedule& s, const args& a);
plan broadcast_rd(schedule& s, const args& a);
plan broadcast_direct(schedule& s, const args& a);

plan reduce_scatter_ring(schedule& s, const args& a);
plan reduce_scatter_rabenseifner(schedule& s, const args& a);  // n must be a power of two
plan reduce_scatter_reducer(schedule& s, const args& a);       // reducer rank = a.root
plan reduce_scatter_direct(schedule& s, const args& a);

plan allgather_ring(schedule& s, const args& a);
plan allgather_rd(schedule& s, const args& a);  // Bruck: any n
plan allgather_direct(schedule& s, const args& a);

plan alltoall_direct(schedule& s, const args& a);
plan barrier_rd(schedule& s, const args& a);  // dissemination

}  // namespace keel::comm::detail
