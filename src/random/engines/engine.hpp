// Internal: the engine behind keel::random::generator. One engine per generator type; the
// generator forwards the cuRAND API to it. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "keel/random/status.hpp"

namespace keel::random::detail {

enum class kind {
  u32,
  uniform,
  uniform_double,
  normal,
  normal_double,
  log_normal,
  log_normal_double
};

struct request {
  kind what;
  void* out;
  std::size_t n;
  double mean;
  double stddev;
  unsigned threads;  // resolved worker count, >= 1
};

class engine {
 public:
  virtual ~engine() = default;
  status set_seed(std::uint64_t seed) {
    // As libcurand: setting the seed it already has changes nothing; a new seed re-initializes
    // the streams where the engine restarts them (seed_changed), without rewinding.
    if (seed == seed_) return status::success;
    seed_ = seed;
    seed_changed();
    return status::success;
  }
  // As libcurand: generators that refuse offsets (MT19937, MTGP32) answer TYPE_ERROR and leave
  // the stream alone.
  status set_offset(std::uint64_t offset) {
    if (!takes_offsets()) return status::type_error;
    offset_ = offset;
    position_ = offset;
    offset_changed();
    return status::success;
  }
  // As libcurand: an ordering the generator does not take is OUT_OF_RANGE and changes nothing;
  // a different accepted one is kept and the engine reacts (ordering_changed), even where two
  // orderings share a layout.
  status set_ordering(ordering order) {
    if (!accepts(order)) return status::out_of_range;
    if (order != order_) {
      order_ = order;
      ordering_changed();
    }
    return status::success;
  }
  // Quasi-random generators only (curandSetQuasiRandomGeneratorDimensions).
  virtual status set_dimensions(std::uint32_t) { return status::type_error; }
  virtual status generate(const request& r) = 0;
  // The normals libcurand's Poisson normal approximation draws: n floats, one per output
  // position, in the generator's own order (see keel/random/poisson.hpp). The position
  // advances by n. Unless the engine says otherwise, its ordinary float normals.
  virtual status generate_poisson_normals(float* out, std::size_t n, unsigned threads) {
    return generate(request{kind::normal, out, n, 0.0, 1.0, threads});
  }

 protected:
  explicit engine(ordering initial) : order_(initial) {}
  virtual bool accepts(ordering order) const = 0;
  virtual bool takes_offsets() const { return true; }
  virtual void seed_changed() {}
  virtual void offset_changed() {}
  virtual void ordering_changed() {}
  std::uint64_t seed_ = 0;
  std::uint64_t offset_ = 0;
  std::uint64_t position_ = 0;  // cuRAND's running position (offset + slots generated)
  ordering order_;
};

// Runs fn(begin, end) over [0, items) split into `workers` contiguous parts (inline when 1).
void parallel_for(std::size_t items, unsigned workers,
                  const std::function<void(std::size_t, std::size_t)>& fn);

// Workers worth using for `n` outputs: 1 below a threshold, else `threads`.
unsigned workers_for(std::size_t n, unsigned threads);

}  // namespace keel::random::detail
