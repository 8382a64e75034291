// Concurrent allocate/free/record_stream from 8 threads on one caching_allocator, for the sim
// and host backends and both policies. A registry of live intervals (its own lock) catches two
// threads holding overlapping blocks at the same time; on the host backend every thread also
// writes its signature into the first and last word of each block and checks it before the
// free, so a block handed to two threads at once corrupts a signature. A ninth thread reads
// stats() and check_invariants() while the others run. Runs under the tsan preset.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/host_backend.hpp"
#include "keel/memory/sim_backend.hpp"

namespace keel::memory {
namespace {

constexpr int k_threads = 8;
constexpr int k_ops_per_thread = 4000;
constexpr std::size_t k_max_live_per_thread = 48;

struct params {
  const char* backend;
  const char* config;
};

std::string name_of(const ::testing::TestParamInfo<params>& info) {
  std::string name = std::string(info.param.backend) + "_" + info.param.config;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// Live intervals of every thread; reports the first overlap it sees.
class interval_registry {
 public:
  void insert(std::uint64_t p, std::size_t size) {
    std::lock_guard lock(mutex_);
    auto next = live_.lower_bound(p);
    if (next != live_.end() && p + size > next->first) note_overlap(p, size, next->first);
    if (next != live_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second > p) note_overlap(p, size, prev->first);
    }
    live_.emplace(p, size);
  }
  void erase(std::uint64_t p) {
    std::lock_guard lock(mutex_);
    live_.erase(p);
  }
  std::string first_error() {
    std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  void note_overlap(std::uint64_t p, std::size_t size, std::uint64_t other) {
    if (error_.empty()) {
      error_ = "block " + std::to_string(p) + "+" + std::to_string(size) + " overlaps live block " +
               std::to_string(other);
    }
  }
  std::mutex mutex_;
  std::map<std::uint64_t, std::size_t> live_;
  std::string error_;
};

std::size_t random_size(std::mt19937_64& rng) {
  switch (rng() % 16) {
    case 0: return 1 + rng() % (12u << 20);  // large: 20 MiB segments and 2 MiB rounding
    case 1:
    case 2: return (1u << 20) + rng() % (1u << 20);  // just above the small pool
    default: return 1 + rng() % (256u << 10);        // small tensors
  }
}

class AllocatorThreads : public ::testing::TestWithParam<params> {};

TEST_P(AllocatorThreads, ConcurrentAllocateFreeKeepsBlocksDisjointAndInvariantsTrue) {
  const params& p = GetParam();
  const bool real_memory = std::string(p.backend) == "host";
  std::unique_ptr<backend> device;
  if (real_memory) {
    device = std::make_unique<host_backend>(std::size_t{32} << 30);
  } else {
    device = std::make_unique<sim_backend>(std::size_t{64} << 30);
  }
  caching_allocator alloc(*device, allocator_config::parse(p.config));
  interval_registry registry;
  std::atomic<bool> corrupted{false};
  std::atomic<int> running{k_threads};

  const auto worker = [&](int t) {
    std::mt19937_64 rng(1000 + t);
    struct live_block {
      std::uint64_t address;
      std::size_t size;
      std::uint64_t signature;
    };
    std::vector<live_block> live;
    const auto release = [&](std::size_t i) {
      const live_block b = live[i];
      if (real_memory) {
        std::uint64_t head = 0, tail = 0;
        std::memcpy(&head, reinterpret_cast<const void*>(b.address), sizeof head);
        std::memcpy(&tail, reinterpret_cast<const void*>(b.address + b.size - sizeof tail),
                    sizeof tail);
        if (head != b.signature || tail != b.signature) corrupted = true;
      }
      registry.erase(b.address);
      alloc.deallocate(b.address);
      live[i] = live.back();
      live.pop_back();
    };
    for (int op = 0; op < k_ops_per_thread; ++op) {
      if (!live.empty() && (live.size() >= k_max_live_per_thread || rng() % 2 == 0)) {
        release(rng() % live.size());
        continue;
      }
      const std::size_t size = std::max<std::size_t>(random_size(rng), 8);
      const stream_id stream = static_cast<stream_id>(rng() % 3);  // three shared streams
      const std::uint64_t address = alloc.allocate(size, stream);
      registry.insert(address, size);
      const std::uint64_t signature =
          (static_cast<std::uint64_t>(t) << 56) | static_cast<std::uint64_t>(op);
      if (real_memory) {
        std::memcpy(reinterpret_cast<void*>(address), &signature, sizeof signature);
        std::memcpy(reinterpret_cast<void*>(address + size - sizeof signature), &signature,
                    sizeof signature);
      }
      if (rng() % 8 == 0) alloc.record_stream(address, stream + 1);  // a cross-stream use
      live.push_back({address, size, signature});
    }
    while (!live.empty()) release(live.size() - 1);
    --running;
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) threads.emplace_back(worker, t);
  std::string concurrent_error;
  while (running.load() > 0) {  // a reader while the writers run
    const memory_stats s = alloc.stats();
    if (s.allocated_bytes[k_all].current < 0 ||
        s.reserved_bytes[k_all].current < s.allocated_bytes[k_all].current) {
      concurrent_error = "stats out of order";
    }
    std::string e = alloc.check_invariants();
    if (!e.empty() && concurrent_error.empty()) concurrent_error = e;
    std::this_thread::yield();
  }
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(registry.first_error(), "");
  EXPECT_FALSE(corrupted.load()) << "a block's signature was overwritten by another thread";
  EXPECT_EQ(concurrent_error, "");
  EXPECT_EQ(alloc.check_invariants(), "");
  const memory_stats s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[k_all].current, 0);
  EXPECT_EQ(s.allocation[k_all].allocated, s.allocation[k_all].freed);
  EXPECT_GT(s.allocation[k_all].allocated, k_threads * k_ops_per_thread / 4);
  alloc.empty_cache();
  EXPECT_EQ(alloc.check_invariants(), "");
  EXPECT_EQ(alloc.stats().active[k_all].current, 0);  // cross-stream frees completed
  EXPECT_EQ(alloc.stats().reserved_bytes[k_all].current, 0);
  EXPECT_EQ(device->used_bytes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(BackendsAndPolicies, AllocatorThreads,
                         ::testing::Values(params{"sim", "policy:pytorch"},
                                           params{"sim", "policy:keel"},
                                           params{"sim", "expandable_segments:True"},
                                           params{"sim", "release_lock_on_cudamalloc:True"},
                                           params{"host", "policy:pytorch"},
                                           params{"host", "policy:keel"},
                                           params{"host", "release_lock_on_cudamalloc:True"}),
                         name_of);

}  // namespace
}  // namespace keel::memory
