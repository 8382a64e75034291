#include "keel/comm/cost.hpp"

#include "algorithm_table.hpp"
#include "keel/core/error.hpp"

#include <cmath>

namespace keel::comm {

collective_estimate estimate_collective(collective c, int ranks, double bytes, const link_model& m,
                                        algorithm requested) {
  if (ranks < 1) throw invalid_argument("collective estimate: ranks must be >= 1");
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw invalid_argument("collective estimate: bytes must be >= 0");
  if (!(m.alpha >= 0) || !(m.beta >= 0) || !(m.gamma >= 0) || !(m.chunk_bytes > 0))
    throw invalid_argument("collective estimate: alpha, beta, gamma >= 0 and chunk > 0");
  detail::cost_inputs in;
  in.n = ranks;
  in.alpha = m.alpha;
  in.beta = m.beta;
  in.gamma = m.gamma;
  in.chunk = m.chunk_bytes;
  collective_estimate best;
  bool found = false;
  for (const auto& e : detail::algorithm_table()) {
    if (e.coll != c || (e.applies && !e.applies(ranks))) continue;
    if (requested != algorithm::auto_select && e.algo != requested) continue;
    const double s = ranks == 1 ? 0 : e.cost(in, bytes);
    if (!found || s < best.seconds) best = {e.algo, s, true}, found = true;
  }
  if (!found) return {};
  // The table's zero-cost entries (barrier) are placeholders, not estimates.
  if (c == collective::barrier || c == collective::sendrecv) best.modelled = false;
  return best;
}

}  // namespace keel::comm
