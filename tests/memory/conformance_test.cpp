// The conformance suite: written once, run for every backend x policy. Randomized sequences
// of allocations, frees, cross-stream uses and cache releases from fixed seeds; after every
// operation the allocator's own invariant check (blocks tile segments, pools agree, stats
// equal values recomputed from scratch) must pass and live blocks must never overlap.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "keel/core/error.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/host_backend.hpp"
#include "keel/memory/sim_backend.hpp"

namespace keel::memory {
namespace {

constexpr std::size_t k_mb = 1u << 20;

struct sim_case {
  static constexpr bool k_real_memory = false;
  static std::unique_ptr<sim_backend> make(std::size_t capacity) {
    return std::make_unique<sim_backend>(capacity);
  }
};
struct host_case {
  static constexpr bool k_real_memory = true;
  static std::unique_ptr<host_backend> make(std::size_t capacity) {
    return std::make_unique<host_backend>(capacity);
  }
};

template <class Backend, int Policy>
struct combo {
  using backend_case = Backend;
  static allocator_config config() {
    switch (Policy) {
      case 0: return allocator_config::parse("");
      case 1: return allocator_config::parse("expandable_segments:True");
      case 2: return allocator_config::parse("max_split_size_mb:40,roundup_power2_divisions:4");
      default: return allocator_config::parse("policy:keel");
    }
  }
};

template <class T>
class Conformance : public ::testing::Test {};

using combos =
    ::testing::Types<combo<sim_case, 0>, combo<sim_case, 1>, combo<sim_case, 2>, combo<sim_case, 3>,
                     combo<host_case, 0>, combo<host_case, 1>, combo<host_case, 3>>;
TYPED_TEST_SUITE(Conformance, combos);

// A size distribution like a training step's: many small tensors, mid-sized activations,
// a few large buffers.
std::size_t draw_size(std::mt19937_64& rng) {
  const int kind = static_cast<int>(rng() % 10);
  if (kind < 5) return 1 + rng() % (k_mb);          // small pool
  if (kind < 9) return k_mb + rng() % (12 * k_mb);  // 1-13 MiB
  return 16 * k_mb + rng() % (48 * k_mb);           // large
}

struct live_block {
  std::size_t size;
  stream_id stream;
};

template <class Combo>
void run_random(std::uint64_t seed, int operations, std::size_t capacity, bool write_every_byte) {
  auto backend = Combo::backend_case::make(capacity);
  caching_allocator a(*backend, Combo::config());
  std::mt19937_64 rng(seed);
  std::map<std::uint64_t, live_block> live;
  int ooms = 0;
  for (int op = 0; op < operations; ++op) {
    const int what = static_cast<int>(rng() % 100);
    if (what < 55 || live.empty()) {
      const std::size_t size = draw_size(rng);
      const stream_id stream = rng() % 8 == 0 ? 1 : 0;
      try {
        const std::uint64_t p = a.allocate(size, stream);
        // No overlap with any live block.
        auto next = live.lower_bound(p);
        if (next != live.end()) ASSERT_LE(p + size, next->first) << "overlap at op " << op;
        if (next != live.begin()) {
          auto prev = std::prev(next);
          ASSERT_LE(prev->first + prev->second.size, p) << "overlap at op " << op;
        }
        live.emplace(p, live_block{size, stream});
        if constexpr (Combo::backend_case::k_real_memory) {
          auto* bytes = reinterpret_cast<unsigned char*>(p);
          if (write_every_byte) {
            std::memset(bytes, 0xab, size);
          } else {
            bytes[0] = 1;
            bytes[size - 1] = 2;
          }
        }
      } catch (const out_of_memory&) {
        ++ooms;
      }
    } else if (what < 92) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      if (rng() % 10 == 0) a.record_stream(it->first, 2 + rng() % 3);
      a.deallocate(it->first);
      live.erase(it);
    } else if (what < 97) {
      backend->streams().set_busy(2 + rng() % 3, rng() % 2 == 0);
    } else if (what < 99) {
      a.empty_cache();
    } else {
      a.reset_peak_stats();
    }
    const std::string problem = a.check_invariants();
    ASSERT_EQ(problem, "") << "after op " << op << " (seed " << seed << ")";
  }
  const memory_stats s = a.stats();
  EXPECT_EQ(s.num_ooms, ooms);
  // Freeing everything and emptying the cache gives every byte back.
  for (const auto& [p, blk] : live) a.deallocate(p);
  for (stream_id s2 = 2; s2 < 5; ++s2) backend->streams().set_busy(s2, false);
  a.empty_cache();
  ASSERT_EQ(a.check_invariants(), "");
  EXPECT_EQ(a.stats().reserved_bytes[k_all].current, 0);
  EXPECT_EQ(a.stats().active_bytes[k_all].current, 0);
  EXPECT_EQ(backend->used_bytes(), 0u);
}

TYPED_TEST(Conformance, RandomizedSequencesKeepEveryInvariant) {
  // >= 100k operations in total per combination, from fixed seeds; the capacity is small
  // enough that the OOM and retry paths run too.
  for (std::uint64_t seed : {1u, 2u, 3u, 4u}) {
    run_random<TypeParam>(seed, 25'000, 640 * k_mb, false);
    if (this->HasFatalFailure()) return;
  }
}

TYPED_TEST(Conformance, EveryByteHandedOutIsWritable) {
  run_random<TypeParam>(99, 2'000, 256 * k_mb, true);
}

TYPED_TEST(Conformance, FreeingEverythingCoalescesToWholeSegments) {
  auto backend = TypeParam::backend_case::make(std::size_t{8} << 30);
  caching_allocator a(*backend, TypeParam::config());
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> ptrs;
  for (int i = 0; i < 300; ++i) ptrs.push_back(a.allocate(draw_size(rng)));
  std::shuffle(ptrs.begin(), ptrs.end(), rng);
  for (auto p : ptrs) a.deallocate(p);
  ASSERT_EQ(a.check_invariants(), "");
  const memory_stats s = a.stats();
  EXPECT_EQ(s.inactive_split[k_all].current, 0);
  const snapshot snap = a.take_snapshot();
  for (const snapshot_segment& seg : snap.segments) {
    EXPECT_EQ(seg.blocks.size(), 1u) << "segment at " << seg.address << " is still split";
  }
}

}  // namespace
}  // namespace keel::memory
