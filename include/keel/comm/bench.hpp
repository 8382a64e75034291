// run_bench — the measurement loop of `keel comm bench`, nccl-tests' all_reduce_perf and
// friends on a keel communicator.
//
// For each size from min_bytes up to max_bytes (times `factor` each step, at least +1 byte;
// no row beyond max_bytes) every rank fills an input of ones, runs `warmup` calls,
// a barrier, then `iters` timed calls, out of place and then in place (nccl-tests' two
// column groups). A row's time is the slowest rank's mean; algbw is bytes / time, busbw
// algbw x busbw_factor (nccl-tests' PERFORMANCE.md). With `check` each column is also run
// once through run_case (selftest.hpp) and its wrong elements summed over ranks. Collective:
// every rank calls it with the same options, and every rank gets the same rows. Throws
// keel::invalid_argument for a barrier (nothing to measure), min_bytes > max_bytes or a root
// that is not a rank; otherwise what the collectives throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "keel/comm/communicator.hpp"

namespace keel::comm {

struct bench_options {
  collective coll = collective::allreduce;
  algorithm algo = algorithm::auto_select;
  dtype type = dtype::f32;
  reduce_op op = reduce_op::sum;
  int root = 0;
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 64u << 20;
  double factor = 2;  // > 1
  int iters = 20;
  int warmup = 5;
  bool check = true;
};

struct bench_timing {
  double time_us = 0;  // per call, the slowest rank's mean
  double algbw = 0;    // GB/s
  double busbw = 0;    // GB/s
  std::int64_t wrong = 0;
};

struct bench_row {
  std::size_t bytes = 0;  // the collective's size in nccl-tests' sense
  std::size_t count = 0;  // elements per rank
  int root = -1;          // reduce and broadcast: the root; else -1
  bench_timing out_of_place, in_place;
};

struct bench_result {
  std::vector<bench_row> rows;
  double avg_busbw = 0;  // over every row and column
  std::int64_t wrong = 0;
};

// nccl-tests' bus bandwidth factor: 2(n-1)/n for allreduce, (n-1)/n for reduce_scatter,
// allgather and alltoall, 1 otherwise.
double busbw_factor(collective c, int ranks) noexcept;

// on_row, when set, sees each row as soon as it is measured (on every rank).
bench_result run_bench(communicator& c, const bench_options& o,
                       const std::function<void(const bench_row&)>& on_row = {});

}  // namespace keel::comm
