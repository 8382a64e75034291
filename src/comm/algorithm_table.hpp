// The (collective, algorithm) table (internal): for every algorithm of every collective,
// whether it applies to a job of n ranks, what the cost model says it costs, and the
// schedule builder that runs it (algorithms.hpp).
//
// The table is the one place that knows which algorithms exist: communicator::choose
// estimates every entry of a collective that applies and takes the cheapest,
// algorithms_for() (types.hpp) lists them in table order, which is the order `auto` breaks
// ties in, and the collectives run entry->build. Costs are the alpha-beta-gamma model:
// alpha seconds per message, beta seconds per byte moved, gamma seconds per byte reduced,
// of the transport the job uses (TCP when any peer is remote), with `chunk` the pipelining
// unit. Immutable; thread-safe.
#pragma once

#include <cstddef>
#include <span>

#include "algorithms.hpp"
#include "keel/comm/types.hpp"

namespace keel::comm::detail {

struct cost_inputs {
  int n = 1;  // ranks
  double alpha = 0, beta = 0, gamma = 0;
  double chunk = 0;  // bytes per pipelined chunk
};

struct algorithm_entry {
  collective coll;
  algorithm algo;
  bool (*applies)(int n);  // nullptr: every n
  double (*cost)(const cost_inputs& in, double bytes);
  plan (*build)(schedule& s, const args& a);
};

// Every entry, grouped by collective, each group in `auto`'s order.
std::span<const algorithm_entry> algorithm_table() noexcept;
// The entry of (c, a), or nullptr when `a` does not implement `c` at all.
const algorithm_entry* find_algorithm(collective c, algorithm a) noexcept;
// Whether (c, a) exists and applies to n ranks.
bool algorithm_applies(collective c, algorithm a, int n) noexcept;

}  // namespace keel::comm::detail
