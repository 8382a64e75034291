// Correctness checking of collectives against a serial reference — what `keel comm verify`,
// the tests and `keel comm bench -c 1` use.
//
// Inputs are a pure function of (rank, element index, reduction), chosen so that integer
// and most floating-point reductions are exact in any order (small integers; powers of two
// for prod), which lets the check be exact everywhere except avg, whose final division is
// compared with a tolerance of a few units in the last place of the type. Every rank
// computes its expected output element by element, without materializing other ranks'
// inputs, so sizes up to the full 64 MiB matrix fit in memory. Thread-safe (no state).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "keel/comm/communicator.hpp"

namespace keel::comm {

struct test_case {
  collective coll = collective::allreduce;
  algorithm algo = algorithm::auto_select;
  dtype type = dtype::f32;
  reduce_op op = reduce_op::sum;
  std::size_t count = 0;  // per-rank count as the collective takes it
  int root = 0;
  bool in_place = false;
};

std::string describe(const test_case& t);

// Fills this rank's input for `t` (size = input elements x dtype size) and the expected
// output; both resized here.
void make_case_buffers(const test_case& t, int rank, int size, std::vector<std::byte>& input,
                       std::vector<std::byte>& expected);
// Number of output elements that differ from `expected` (0: pass).
std::size_t count_wrong(const test_case& t, int rank, int size,
                        const std::vector<std::byte>& output,
                        const std::vector<std::byte>& expected);
// Runs `t` on `c` (all ranks must call it with the same case) and returns count_wrong.
std::size_t run_case(communicator& c, const test_case& t, call_options o = {});

// The cases of the quick slice (every collective x algorithm x dtype, ops and sizes
// rotated through) or of the full matrix (every combination; sizes up to max_bytes).
std::vector<test_case> case_matrix(int size, bool full, std::size_t max_bytes);

// `keel comm verify` on one rank: every case of case_matrix(c.size(), full, max_bytes), the
// wrong counts summed over ranks, so every rank returns the same report. Collective.
struct verify_report {
  std::size_t cases = 0;
  std::vector<std::string> failed;  // "<describe(case)>: <n> wrong", in case order
  double seconds = 0;               // wall time of the whole matrix on this rank
};
verify_report run_verify(communicator& c, bool full, std::size_t max_bytes);

}  // namespace keel::comm
