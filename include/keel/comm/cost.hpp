// keel::comm cost estimates — the alpha-beta-gamma model that communicator::choose() uses to
// pick an algorithm, for any link: a caller that knows a link's latency and bandwidth (a GPU's
// NVLink, PCIe) asks what a collective of S bytes costs on n ranks without a communicator.
//
// alpha: seconds per message; beta: seconds per byte moved; gamma: seconds per byte reduced;
// chunk_bytes: the pipelining unit of the ring and tree algorithms. `bytes` is the model's S:
// the buffer each rank contributes (allreduce, reduce, broadcast: the whole buffer;
// reduce_scatter: the whole input; allgather: the whole output; alltoall: the whole input, a
// block per rank). The estimate is the algorithm table's (src/comm/algorithm_table.cpp), the
// same numbers `KEEL_LOG=info` prints. Collectives the table does not model (sendrecv,
// barrier) estimate 0 seconds, and `modelled` says so. Pure functions; thread-safe.
#pragma once

#include "keel/comm/types.hpp"

namespace keel::comm {

struct link_model {
  double alpha = 0;  // seconds per message
  double beta = 0;   // seconds per byte
  double gamma = 0;  // seconds per byte reduced
  double chunk_bytes = 256.0 * 1024;
};

struct collective_estimate {
  algorithm algo = algorithm::ring;
  double seconds = 0;
  bool modelled = false;  // false: the table has no cost for this collective
};

// The cheapest algorithm that applies to `ranks` ranks, or `requested` when it applies.
// Throws keel::invalid_argument for ranks < 1, negative bytes or negative model terms.
collective_estimate estimate_collective(collective c, int ranks, double bytes, const link_model& m,
                                        algorithm requested = algorithm::auto_select);

}  // namespace keel::comm
