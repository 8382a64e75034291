// The CUDA backend and libkeel_pluggable_alloc on a real GPU (label gpu). Tests that need a
// device skip with the CUDA error when there is none; the no-device behaviour is checked
// everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/cuda_backend.hpp"
#include "keel/memory/pluggable.h"

namespace keel::memory {
namespace {

constexpr std::size_t k_mib = std::size_t{1} << 20;

bool have_device(std::string& reason) {
  if (cuda_backend::device_count(&reason) > 0) return true;
  if (reason.empty()) reason = "cudaGetDeviceCount reports 0 devices";
  return false;
}

#define REQUIRE_GPU()                                                       \
  do {                                                                      \
    std::string reason;                                                     \
    if (!have_device(reason)) GTEST_SKIP() << "no CUDA device: " << reason; \
  } while (0)

// Writes `value` over [address, address + bytes) and reads back its first, middle and last byte.
void expect_writable(cuda_backend& b, std::uint64_t address, std::size_t bytes,
                     unsigned char value) {
  b.fill(address, value, bytes);
  for (std::size_t offset : {std::size_t{0}, bytes / 2, bytes - 1}) {
    unsigned char got = 0;
    b.copy_to_host(&got, address + offset, 1);
    ASSERT_EQ(got, value) << "at " << address << "+" << offset;
  }
}

TEST(CudaBackend, WithoutDeviceConstructionThrowsBackendErrorWithTheReason) {
  std::string reason;
  if (have_device(reason)) {
    EXPECT_THROW(cuda_backend(cuda_backend::device_count()), backend_error);
    return;
  }
  try {
    cuda_backend b(0);
    FAIL() << "constructed a CUDA backend without a device";
  } catch (const backend_error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device 0"), std::string::npos) << e.what();
  }
}

TEST(CudaBackend, SegmentsAreRealDeviceMemoryAndOomIsNullopt) {
  REQUIRE_GPU();
  cuda_backend b(0);
  EXPECT_EQ(b.name(), "cuda");
  EXPECT_GT(b.capacity(), 0u);
  const auto a = b.allocate_segment(4 * k_mib);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(b.used_bytes(), 4 * k_mib);
  expect_writable(b, *a, 4 * k_mib, 0xab);
  EXPECT_FALSE(b.allocate_segment(b.capacity() * 2).has_value());
  const auto c = b.allocate_segment(2 * k_mib);  // the OOM left no error behind
  ASSERT_TRUE(c.has_value());
  b.free_segment(*a, 4 * k_mib);
  b.free_segment(*c, 2 * k_mib);
  EXPECT_EQ(b.used_bytes(), 0u);
}

TEST(CudaBackend, PagesMapAndUnmapIndependently) {
  REQUIRE_GPU();
  cuda_backend b(0);
  ASSERT_TRUE(b.supports_virtual_memory());
  const std::size_t page = b.page_granularity();
  ASSERT_GT(page, 0u);
  const auto range = b.reserve_range(8 * page);
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(b.used_bytes(), 0u);
  ASSERT_TRUE(b.map_pages(*range, 2 * page, 4 * page));
  EXPECT_EQ(b.used_bytes(), 4 * page);
  expect_writable(b, *range + 2 * page, 4 * page, 0x5a);
  EXPECT_THROW(b.map_pages(*range, 3 * page, page), invalid_argument);
  b.unmap_pages(*range, 3 * page, page);  // one page out of the middle
  EXPECT_EQ(b.used_bytes(), 3 * page);
  unsigned char got = 0;
  b.copy_to_host(&got, *range + 4 * page, 1);  // the neighbours keep their contents
  EXPECT_EQ(got, 0x5a);
  ASSERT_TRUE(b.map_pages(*range, 3 * page, page));
  expect_writable(b, *range + 2 * page, 4 * page, 0x17);
  b.release_range(*range, 8 * page);  // with pages still mapped
  EXPECT_EQ(b.used_bytes(), 0u);
}

TEST(CudaBackend, MappingMoreThanTheDeviceHasFailsWithoutPartialState) {
  REQUIRE_GPU();
  cuda_backend b(0);
  const std::size_t page = b.page_granularity();
  const std::size_t bytes = (b.capacity() / page + 16) * page;
  const auto range = b.reserve_range(bytes);
  ASSERT_TRUE(range.has_value());
  EXPECT_FALSE(b.map_pages(*range, 0, bytes));
  EXPECT_EQ(b.used_bytes(), 0u);
  EXPECT_TRUE(b.map_pages(*range, 0, page));
  b.release_range(*range, bytes);
}

TEST(CudaBackend, EventsCompleteAndArePooled) {
  REQUIRE_GPU();
  cuda_backend b(0);
  const auto a = b.allocate_segment(64 * k_mib);
  ASSERT_TRUE(a.has_value());
  b.fill(*a, 1, 64 * k_mib);
  const event_id e = b.record_event(0);
  b.synchronize_event(e);
  EXPECT_TRUE(b.query_event(e));
  b.destroy_event(e);
  const event_id again = b.record_event(2);  // cudaStreamPerThread; reuses the pooled event
  EXPECT_EQ(again, e);
  b.synchronize_event(again);
  EXPECT_TRUE(b.query_event(again));
  b.destroy_event(again);
  b.free_segment(*a, 64 * k_mib);
}

class CudaCachingAllocator : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaCachingAllocator, RandomMixIsWritableDisjointAndConsistent) {
  REQUIRE_GPU();
  cuda_backend b(0);
  {
    caching_allocator alloc(b, allocator_config::parse(GetParam()));
    std::mt19937_64 rng(42);
    std::map<std::uint64_t, std::size_t> live;
    for (int i = 0; i < 400; ++i) {
      if (!live.empty() && rng() % 3 == 0) {
        auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
        alloc.deallocate(it->first);
        live.erase(it);
        continue;
      }
      const std::size_t size = rng() % 4 == 0 ? 1 + rng() % (48 * k_mib) : 1 + rng() % (64 << 10);
      const std::uint64_t p = alloc.allocate(size);
      auto next = live.lower_bound(p);
      if (next != live.end()) ASSERT_LE(p + size, next->first) << "overlaps the next block";
      if (next != live.begin()) ASSERT_LE(std::prev(next)->first + std::prev(next)->second, p);
      live.emplace(p, size);
      expect_writable(b, p, size, static_cast<unsigned char>(i));
    }
    ASSERT_EQ(alloc.check_invariants(), "");
    const std::uint64_t cross = alloc.allocate(k_mib);
    alloc.record_stream(cross, 2);  // used on cudaStreamPerThread: freed after an event
    alloc.deallocate(cross);
    for (const auto& [p, size] : live) alloc.deallocate(p);
    alloc.empty_cache();
    EXPECT_EQ(alloc.check_invariants(), "");
    EXPECT_EQ(alloc.stats().reserved_bytes[k_all].current, 0);
    EXPECT_EQ(b.used_bytes(), 0u);
    try {
      alloc.allocate(b.capacity() * 2);
      FAIL() << "allocated twice the device";
    } catch (const out_of_memory& e) {
      EXPECT_EQ(std::string(e.what()).rfind("CUDA out of memory. Tried to allocate", 0), 0u)
          << e.what();
    }
  }
  EXPECT_EQ(b.used_bytes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Policies, CudaCachingAllocator,
                         ::testing::Values("", "expandable_segments:True", "policy:keel"));

TEST(PluggableAllocator, MallocFreeStatsAndOom) {
  REQUIRE_GPU();
  void* p = keel_malloc(3 * 1000 * 1000, 0, nullptr);
  ASSERT_NE(p, nullptr);
  cuda_backend b(0);
  expect_writable(b, reinterpret_cast<std::uint64_t>(p), 3 * 1000 * 1000, 0x33);
  EXPECT_EQ(keel_record_stream(p, 0, reinterpret_cast<keel_stream_t>(2)), 0);
  keel_free(p, 3 * 1000 * 1000, 0, nullptr);
  EXPECT_EQ(keel_malloc(0, 0, nullptr), nullptr);
  EXPECT_EQ(keel_malloc(static_cast<ssize_t>(b.capacity()) * 2, 0, nullptr), nullptr);
  std::string json(keel_memory_stats_json(0, nullptr, 0), '\0');
  keel_memory_stats_json(0, json.data(), json.size() + 1);
  EXPECT_NE(json.find("\"num_ooms\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"allocation.all.allocated\": 1"), std::string::npos) << json;
  keel_empty_cache(-1);
  EXPECT_EQ(keel_set_memory_fraction(1.5, 0), -1);
}

TEST(PluggableAllocator, WithoutDeviceMallocReturnsNull) {
  std::string reason;
  if (have_device(reason)) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(keel_malloc(1024, 0, nullptr), nullptr);
  EXPECT_EQ(keel_malloc(1024, -1, nullptr), nullptr);
  keel_free(nullptr, 0, 0, nullptr);
  keel_empty_cache(-1);
  char buffer[8];
  EXPECT_EQ(keel_memory_stats_json(0, buffer, sizeof buffer), 2u);
  EXPECT_STREQ(buffer, "{}");
}

}  // namespace
}  // namespace keel::memory
