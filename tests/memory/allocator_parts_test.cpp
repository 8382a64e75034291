// The caching allocator's parts on their own (src/memory/allocator/): the expandable segment's
// page mapping, the trace ring, the stream-ordered events and the two pool policies.
#include <gtest/gtest.h>

#include <vector>

#include "../../src/memory/allocator/expandable_segment.hpp"
#include "../../src/memory/allocator/locked_backend.hpp"
#include "../../src/memory/allocator/pool_policy.hpp"
#include "../../src/memory/allocator/stream_events.hpp"
#include "../../src/memory/allocator/trace_ring.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/sim_backend.hpp"

namespace keel::memory::detail {
namespace {

constexpr std::size_t k_mib = 1u << 20;

TEST(ExpandableSegment, MapsThePagesARangeTouchesAndUnmapsWholePagesOnly) {
  sim_backend device(64 * k_mib);
  locked_backend locked(device);
  {
    auto es = expandable_segment::reserve(locked, 2 * k_mib, 8, 3);
    ASSERT_NE(es, nullptr);
    EXPECT_EQ(es->size(), 16 * k_mib);
    EXPECT_EQ(es->stream(), 3u);
    // 1 byte into page 0 to 1 byte into page 2: pages 0, 1 and 2.
    EXPECT_EQ(es->map_extent(es->base() + 1, 4 * k_mib), 6 * k_mib);
    EXPECT_EQ(es->map(es->base() + 1, 4 * k_mib), 6 * k_mib);
    EXPECT_EQ(es->mapped_bytes(), 6 * k_mib);
    EXPECT_EQ(device.used_bytes(), 6 * k_mib);
    // Whole pages inside [base + 1, base + 5 MiB): page 1 only.
    const auto [start, bytes] = es->unmap(es->base() + 1, 5 * k_mib);
    EXPECT_EQ(start, es->base() + 2 * k_mib);
    EXPECT_EQ(bytes, 2 * k_mib);
    EXPECT_EQ(es->mapped_bytes(), 4 * k_mib);
    EXPECT_EQ(es->unmap(es->base() + 1, k_mib).second, 0u);    // no whole page inside
    EXPECT_EQ(es->map(es->base() + 2 * k_mib, 1), 2 * k_mib);  // page 1 again
  }
  EXPECT_EQ(device.used_bytes(), 0u);  // destroying the segment released its range
}

TEST(ExpandableSegment, MappingBeyondTheDeviceMapsNothing) {
  sim_backend device(4 * k_mib);
  locked_backend locked(device);
  auto es = expandable_segment::reserve(locked, 2 * k_mib, 8, 0);
  ASSERT_NE(es, nullptr);
  EXPECT_EQ(es->map(es->base(), 6 * k_mib), 0u);
  EXPECT_EQ(es->mapped_bytes(), 0u);
  EXPECT_EQ(es->map(es->base(), 4 * k_mib), 4 * k_mib);
}

TEST(TraceRing, KeepsTheLastEntriesOldestFirst) {
  trace_ring ring;
  EXPECT_FALSE(ring.enabled());
  ring.enable(true, 3);
  for (std::uint64_t i = 1; i <= 5; ++i) {
    trace_entry e;
    e.addr = i;
    ring.push(e);
  }
  std::vector<std::uint64_t> addrs;
  for (const trace_entry& e : ring.entries()) addrs.push_back(e.addr);
  EXPECT_EQ(addrs, (std::vector<std::uint64_t>{3, 4, 5}));
  ring.enable(false, 3);
  EXPECT_TRUE(ring.entries().empty());
}

TEST(StreamEvents, ABlockIsReadyOnceEveryStreamItWasUsedOnIsDone) {
  sim_backend device;
  locked_backend locked(device);
  stream_events events(locked);
  block b;
  b.stream_uses = {1, 2};
  events.record(&b);
  EXPECT_TRUE(b.stream_uses.empty());
  EXPECT_EQ(b.event_count, 2);
  int waiting = 0;
  events.for_each_waiting([&](block*) { ++waiting; });
  EXPECT_EQ(waiting, 2);
  std::vector<block*> ready;
  events.synchronize_all([&](block* r) { ready.push_back(r); });
  EXPECT_EQ(ready, std::vector<block*>{&b});
  EXPECT_EQ(b.event_count, 0);
}

TEST(PoolPolicy, PyTorchAndKeelAnswerDifferently) {
  const auto pytorch = pool_policy::make(policy_kind::pytorch);
  EXPECT_FALSE(pytorch->always_expandable());
  EXPECT_TRUE(pytorch->uses_small_pool(k_small_size));
  EXPECT_FALSE(pytorch->uses_small_pool(k_small_size + 512));
  EXPECT_EQ(pytorch->page_size(false), k_large_buffer);
  EXPECT_EQ(pytorch->recycle_bytes(100 * k_mib, 10 * k_mib), 0u);

  const auto keel = pool_policy::make(policy_kind::keel);
  EXPECT_TRUE(keel->always_expandable());
  EXPECT_FALSE(keel->uses_small_pool(512));
  EXPECT_EQ(keel->page_size(false), k_small_buffer);
  // Below the high-water mark nothing is recycled; above it, the excess.
  EXPECT_EQ(keel->recycle_bytes(100 * k_mib, 0), 0u);
  EXPECT_EQ(keel->recycle_bytes(40 * k_mib, 50 * k_mib), 0u);
  EXPECT_EQ(keel->recycle_bytes(90 * k_mib, 20 * k_mib), 10 * k_mib);
}

}  // namespace
}  // namespace keel::memory::detail
