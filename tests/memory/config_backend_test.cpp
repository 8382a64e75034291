// The sim and host backends' primitives (allocator_config's tests: allocator_config_test.cpp).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>

#include "keel/core/error.hpp"
#include "keel/memory/host_backend.hpp"
#include "keel/memory/sim_backend.hpp"

namespace keel::memory {
namespace {

TEST(SimBackend, DeterministicAlignedAddressesAndCapacity) {
  sim_backend a(100u << 20);
  sim_backend b(100u << 20);
  const auto x = a.allocate_segment(3u << 20);
  ASSERT_TRUE(x);
  EXPECT_EQ(*x, *b.allocate_segment(3u << 20));
  EXPECT_EQ(*x % 512, 0u);
  EXPECT_FALSE(a.allocate_segment(98u << 20));  // over capacity: an expected outcome
  EXPECT_EQ(a.used_bytes(), 3u << 20);
  a.free_segment(*x, 3u << 20);
  EXPECT_EQ(a.used_bytes(), 0u);
  EXPECT_THROW(a.allocate_segment(0), invalid_argument);
}

TEST(SimBackend, PagesMapOnceAndCountAgainstCapacity) {
  sim_backend s(8u << 20);
  const auto range = s.reserve_range(32u << 20);
  ASSERT_TRUE(range);
  EXPECT_TRUE(s.map_pages(*range, 0, 4u << 20));
  EXPECT_THROW(s.map_pages(*range, 2u << 20, 2u << 20), invalid_argument);  // mapped twice
  EXPECT_THROW(s.map_pages(*range, 1u << 20, 2u << 20), invalid_argument);  // not page aligned
  EXPECT_FALSE(s.map_pages(*range, 4u << 20, 6u << 20));                    // over capacity
  EXPECT_TRUE(s.map_pages(*range, 4u << 20, 4u << 20));
  s.unmap_pages(*range, 0, 8u << 20);
  EXPECT_EQ(s.used_bytes(), 0u);
  s.release_range(*range, 32u << 20);
}

TEST(StreamModel, EventsCompleteWhenTheStreamIsIdle) {
  sim_backend s;
  const event_id idle = s.record_event(3);
  EXPECT_TRUE(s.query_event(idle));
  s.streams().set_busy(3, true);
  const event_id busy = s.record_event(3);
  EXPECT_FALSE(s.query_event(busy));
  s.synchronize_event(busy);
  EXPECT_TRUE(s.query_event(busy));
  EXPECT_FALSE(s.streams().busy(3));
}

TEST(HostBackend, SegmentsAreRealMemory) {
  host_backend h(64u << 20);
  const auto x = h.allocate_segment(4u << 20);
  ASSERT_TRUE(x);
  std::memset(reinterpret_cast<void*>(*x), 0x5a, 4u << 20);
  EXPECT_FALSE(h.allocate_segment(61u << 20));
  h.free_segment(*x, 4u << 20);
  EXPECT_EQ(h.used_bytes(), 0u);
}

TEST(HostBackend, MappedPagesAreWritableAndUnmappedOnesAreNot) {
  host_backend h(64u << 20);
  const auto range = h.reserve_range(16u << 20);
  ASSERT_TRUE(range);
  ASSERT_TRUE(h.map_pages(*range, 2u << 20, 4u << 20));
  auto* p = reinterpret_cast<unsigned char*>(*range);
  std::memset(p + (2u << 20), 0x11, 4u << 20);
  EXPECT_EQ(p[(6u << 20) - 1], 0x11);
  // The pages outside the mapping are inaccessible: mincore-free check via mprotect probing.
  EXPECT_NE(mprotect(p, 4096, PROT_READ), -1);  // the range itself is ours
  mprotect(p, 4096, PROT_NONE);
  h.unmap_pages(*range, 2u << 20, 4u << 20);
  EXPECT_EQ(h.used_bytes(), 0u);
  // A page mapped again reads as zeros: the old contents were given back.
  ASSERT_TRUE(h.map_pages(*range, 2u << 20, 2u << 20));
  EXPECT_EQ(p[2u << 20], 0);
  h.release_range(*range, 16u << 20);
}

}  // namespace
}  // namespace keel::memory
