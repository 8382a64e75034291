// The caching allocator's lock contract: free-memory callbacks, trace trackers and
// out-of-memory observers run with the allocator lock released, so they may call the
// allocator again; release_lock_on_cudamalloc lets other threads use the cache while a
// segment is being allocated; a bare allocator reads no environment. Every test that could
// hang on a deadlock runs under a timeout guard that fails the test binary instead. Runs under
// the tsan preset.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "forwarding_backend.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/host_backend.hpp"
#include "keel/memory/sim_backend.hpp"

namespace keel::memory {
namespace {

constexpr std::size_t k_mib = 1u << 20;

// Runs `body` on a thread of its own; when it has not finished within `seconds` (a deadlock),
// reports the test and ends the process, since a thread stuck on a lock cannot be joined.
void within_deadline(const std::function<void()>& body, double seconds = 60) {
  std::packaged_task<void()> task(body);
  std::future<void> done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::fprintf(stderr, "%s.%s: still running after %.0f s: deadlock\n", test->test_suite_name(),
                 test->name(), seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }
  runner.join();
  done.get();  // rethrows what the body threw
}

TEST(Reentrancy, FreeMemoryCallbackMayFreeAndEmptyTheCache) {
  within_deadline([] {
    sim_backend b(100 * k_mib);
    caching_allocator a(b, {});
    std::uint64_t held = a.allocate(60 * k_mib);
    int calls = 0;
    a.add_free_memory_callback([&] {
      ++calls;
      if (held == 0) return false;
      a.deallocate(std::exchange(held, 0));  // the natural use: drop a cached tensor
      a.empty_cache();
      EXPECT_EQ(a.check_invariants(), "");
      return true;
    });
    // 60 MiB live + 60 MiB more > 100 MiB: no cached block fits, the callback frees one.
    const std::uint64_t p = a.allocate(60 * k_mib);
    EXPECT_NE(p, 0u);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(a.stats().num_alloc_retries, 0);  // the device had room after the callback
    EXPECT_EQ(a.check_invariants(), "");
    a.deallocate(p);
  });
}

TEST(Reentrancy, FreeMemoryCallbackMayAllocateAndRegisterCallbacks) {
  within_deadline([] {
    sim_backend b(100 * k_mib);
    caching_allocator a(b, {});
    std::vector<std::uint64_t> inner;
    int depth = 0;
    a.add_free_memory_callback([&] {
      if (depth < 2) {  // the inner allocation finds no block either and calls back again
        ++depth;
        inner.push_back(a.allocate(1 * k_mib));  // re-enters the malloc path
      }
      a.add_free_memory_callback([] { return false; });
      (void)a.stats();
      (void)a.take_snapshot();
      return false;
    });
    const std::uint64_t p = a.allocate(10 * k_mib);
    EXPECT_NE(p, 0u);
    EXPECT_FALSE(inner.empty());
    EXPECT_EQ(a.check_invariants(), "");
  });
}

TEST(Reentrancy, ACallbackThatThrowsLeavesTheAllocatorIntact) {
  within_deadline([] {
    sim_backend b(100 * k_mib);
    caching_allocator a(b, {});
    a.add_free_memory_callback([]() -> bool { throw std::runtime_error("callback failed"); });
    EXPECT_THROW(a.allocate(10 * k_mib), std::runtime_error);
    EXPECT_EQ(a.check_invariants(), "");
    EXPECT_EQ(a.stats().allocation[k_all].current, 0);
  });
}

TEST(Reentrancy, TrackerMayCallTheAllocatorAndSeesEveryEventInOrder) {
  within_deadline([] {
    sim_backend b(1u << 30);
    caching_allocator a(b, {});
    a.record_history(true);
    std::vector<std::tuple<trace_action, std::uint64_t, std::size_t>> seen;
    std::uint64_t freed_from_tracker = 0;
    a.attach_trace_tracker([&](const trace_entry& e) {
      seen.emplace_back(e.action, e.addr, e.size);
      (void)a.usage();
      EXPECT_EQ(a.check_invariants(), "");
      // Freeing from the tracker: its own events arrive after this call returns, in order.
      if (e.action == trace_action::alloc && e.size == 3000) {
        freed_from_tracker = e.addr;
        a.deallocate(e.addr);
      }
    });
    const std::uint64_t p = a.allocate(1000);
    a.allocate(3000);
    a.deallocate(p);
    a.empty_cache();
    EXPECT_NE(freed_from_tracker, 0u);
    const snapshot s = a.take_snapshot();
    std::vector<std::tuple<trace_action, std::uint64_t, std::size_t>> recorded;
    for (const trace_entry& e : s.device_traces[0]) recorded.emplace_back(e.action, e.addr, e.size);
    EXPECT_EQ(seen, recorded);
    ASSERT_GE(seen.size(), 6u);
    EXPECT_EQ(std::get<0>(seen.front()), trace_action::segment_alloc);
    EXPECT_EQ(std::get<0>(seen.back()), trace_action::segment_free);
  });
}

TEST(Reentrancy, ATrackerThatThrowsIsIgnored) {
  within_deadline([] {
    sim_backend b(1u << 30);
    caching_allocator a(b, {});
    int calls = 0;
    a.attach_trace_tracker([&](const trace_entry&) {
      ++calls;
      throw std::runtime_error("tracker failed");
    });
    const std::uint64_t p = a.allocate(4096);
    a.deallocate(p);
    EXPECT_EQ(calls, 4);  // segment_alloc, alloc, free_requested, free_completed
    EXPECT_EQ(a.check_invariants(), "");
    a.attach_trace_tracker({});
    a.deallocate(a.allocate(4096));
    EXPECT_EQ(calls, 4);
  });
}

TEST(Reentrancy, OutOfMemoryObserversRunOutsideTheLockBeforeTheThrow) {
  within_deadline([] {
    sim_backend b(64 * k_mib);
    caching_allocator a(b, {});
    bool oom_traced = false;
    a.attach_trace_tracker([&](const trace_entry& e) {
      if (e.action == trace_action::oom) oom_traced = true;
    });
    std::vector<out_of_memory_info> seen;
    a.attach_out_of_memory_observer([&](const out_of_memory_info& info) {
      EXPECT_TRUE(oom_traced);  // the oom entry was delivered first
      seen.push_back(info);
      a.empty_cache();  // re-enters
      EXPECT_EQ(a.stats().num_ooms, 1);
    });
    a.attach_out_of_memory_observer([](const out_of_memory_info&) { throw std::logic_error("x"); });
    const std::uint64_t live = a.allocate(40 * k_mib);
    EXPECT_THROW(a.allocate(40 * k_mib, 7), out_of_memory);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].device, 0);
    EXPECT_EQ(seen[0].size, 40 * k_mib);
    EXPECT_EQ(seen[0].device_total, 64 * k_mib);
    EXPECT_EQ(seen[0].device_free, 24 * k_mib);
    EXPECT_EQ(seen[0].stream, 7u);
    a.deallocate(live);
    EXPECT_EQ(a.check_invariants(), "");
  });
}

// A backend whose segment allocation waits until released: a segment allocation in flight.
class gated_backend final : public test::forwarding_backend {
 public:
  explicit gated_backend(std::size_t capacity) : forwarding_backend(capacity) {}
  void hold() {
    std::lock_guard lock(mutex_);
    held_ = true;
  }
  void wait_until_blocked() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return blocked_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    held_ = false;
    changed_.notify_all();
  }

 private:
  std::string_view do_name() const noexcept override { return "gated"; }
  std::optional<std::uint64_t> do_allocate_segment(std::size_t bytes) override {
    {
      std::unique_lock lock(mutex_);
      if (held_) {
        blocked_ = true;
        changed_.notify_all();
        changed_.wait(lock, [&] { return !held_; });
      }
    }
    return inner_.allocate_segment(bytes);
  }
  // Segments only: no virtual memory.
  bool do_supports_virtual_memory() const noexcept override { return false; }
  std::optional<std::uint64_t> do_reserve_range(std::size_t) override { return std::nullopt; }
  void do_release_range(std::uint64_t, std::size_t) noexcept override {}
  bool do_map_pages(std::uint64_t, std::size_t, std::size_t) override { return false; }
  void do_unmap_pages(std::uint64_t, std::size_t, std::size_t) noexcept override {}

  std::mutex mutex_;
  std::condition_variable changed_;
  bool held_ = false;
  bool blocked_ = false;
};

TEST(ReleaseLockOnMalloc, TheCacheServesOtherThreadsWhileASegmentIsAllocated) {
  within_deadline([] {
    gated_backend b(1u << 30);
    caching_allocator a(b, allocator_config::parse("release_lock_on_cudamalloc:True"));
    a.deallocate(a.allocate(4096));  // a cached small block
    b.hold();
    std::thread slow([&] { a.deallocate(a.allocate(30 * k_mib)); });  // needs a new segment
    b.wait_until_blocked();
    // The allocator lock is free: the cache serves this thread meanwhile.
    const std::uint64_t p = a.allocate(4096);
    EXPECT_NE(p, 0u);
    a.deallocate(p);
    (void)a.stats();
    b.release();
    slow.join();
    EXPECT_EQ(a.check_invariants(), "");
    EXPECT_EQ(a.stats().segment[k_all].current, 2);
  });
}

TEST(ReleaseLockOnMalloc, SegmentsInFlightCountAgainstTheMemoryFraction) {
  within_deadline([] {
    gated_backend b(100 * k_mib);
    caching_allocator a(b, allocator_config::parse("release_lock_on_cudamalloc:True"));
    a.set_memory_fraction(0.5);
    b.hold();
    std::thread slow([&] { a.allocate(40 * k_mib); });
    b.wait_until_blocked();
    // 40 MiB are on their way: another 40 MiB would exceed the 50 MiB cap, before or after
    // they arrive. (The OOM message asks the backend what is free, so the racer waits for
    // the backend lock until the slow allocation ends.)
    bool refused = false;
    std::thread racer([&] {
      try {
        a.allocate(40 * k_mib);
      } catch (const out_of_memory&) {
        refused = true;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    b.release();
    slow.join();
    racer.join();
    EXPECT_TRUE(refused);
    EXPECT_EQ(a.stats().reserved_bytes[k_all].current, static_cast<std::int64_t>(40 * k_mib));
    EXPECT_EQ(a.check_invariants(), "");
  });
}

// Several threads allocate and free on a small device, so that callbacks, retries and OOMs
// happen concurrently; a callback frees the thread's own cached blocks, a tracker and an OOM
// observer call back into the allocator. The tracker must see exactly the recorded trace, in
// its order.
struct concurrent_params {
  const char* backend;
  const char* config;
};

class ReentrantThreads : public ::testing::TestWithParam<concurrent_params> {};

TEST_P(ReentrantThreads, CallbacksTrackersAndObserversUnderContention) {
  within_deadline(
      [this] {
        const concurrent_params& param = GetParam();
        std::unique_ptr<backend> device;
        if (std::string(param.backend) == "host") {
          device = std::make_unique<host_backend>(256 * k_mib);
        } else {
          device = std::make_unique<sim_backend>(256 * k_mib);
        }
        caching_allocator a(*device, allocator_config::parse(param.config));
        a.record_history(true);
        std::vector<std::tuple<trace_action, std::uint64_t, std::size_t>> seen;  // tracker only
        a.attach_trace_tracker([&](const trace_entry& e) {
          seen.emplace_back(e.action, e.addr, e.size);
          if (seen.size() % 64 == 0) (void)a.usage();
        });
        std::atomic<int> callbacks{0}, ooms{0};
        a.add_free_memory_callback([&] {
          ++callbacks;
          a.empty_cache();
          return true;
        });
        a.attach_out_of_memory_observer([&](const out_of_memory_info&) {
          ++ooms;
          (void)a.stats();
        });
        constexpr int k_threads = 4;
        const auto worker = [&](int t) {
          std::mt19937_64 rng(77 + t);
          std::vector<std::uint64_t> live;
          for (int op = 0; op < 1500; ++op) {
            if (!live.empty() && (live.size() >= 12 || rng() % 2 == 0)) {
              const std::size_t i = rng() % live.size();
              a.deallocate(live[i]);
              live[i] = live.back();
              live.pop_back();
              continue;
            }
            const std::size_t size =
                rng() % 4 == 0 ? 1 + rng() % (24 * k_mib) : 1 + rng() % (512u << 10);
            try {
              const std::uint64_t p = a.allocate(size, static_cast<stream_id>(rng() % 2));
              if (rng() % 8 == 0) a.record_stream(p, 5);
              live.push_back(p);
            } catch (const out_of_memory&) {
            }
          }
          for (std::uint64_t p : live) a.deallocate(p);
        };
        std::vector<std::thread> threads;
        for (int t = 0; t < k_threads; ++t) threads.emplace_back(worker, t);
        for (std::thread& th : threads) th.join();
        a.empty_cache();
        EXPECT_EQ(a.check_invariants(), "");
        EXPECT_GT(callbacks.load(), 0);
        EXPECT_EQ(a.stats().num_ooms, ooms.load());
        EXPECT_EQ(a.stats().allocation[k_all].current, 0);
        // Every entry reached the tracker, in the order the allocator recorded them.
        a.attach_trace_tracker({});
        std::vector<std::tuple<trace_action, std::uint64_t, std::size_t>> recorded;
        const snapshot s = a.take_snapshot();
        for (const trace_entry& e : s.device_traces[0]) {
          recorded.emplace_back(e.action, e.addr, e.size);
        }
        EXPECT_EQ(seen.size(), recorded.size());
        EXPECT_TRUE(seen == recorded) << "the tracker saw another order than the trace";
      },
      300);
}

INSTANTIATE_TEST_SUITE_P(BackendsAndPolicies, ReentrantThreads,
                         ::testing::Values(concurrent_params{"sim", "policy:pytorch"},
                                           concurrent_params{"sim", "policy:keel"},
                                           concurrent_params{"sim",
                                                             "release_lock_on_cudamalloc:True"},
                                           concurrent_params{"host", "expandable_segments:True"}),
                         [](const ::testing::TestParamInfo<concurrent_params>& info) {
                           std::string name =
                               std::string(info.param.backend) + "_" + info.param.config;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// A bare allocator has PyTorch's defaults whatever the environment says; the environment is
// read only through allocator_config::from_environment().
TEST(Environment, ABareAllocatorReadsNone) {
  const char* names[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "KEEL_ALLOC_CONF"};
  std::vector<std::optional<std::string>> saved;
  for (const char* n : names) {
    const char* v = std::getenv(n);
    saved.push_back(v ? std::optional<std::string>(v) : std::nullopt);
  }
  ::setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True,max_split_size_mb:64", 1);
  ::setenv("KEEL_ALLOC_CONF", "policy:keel", 1);
  sim_backend b;
  caching_allocator bare(b);
  EXPECT_EQ(bare.config(), allocator_config{});
  caching_allocator from_env(b, allocator_config::from_environment());
  EXPECT_EQ(from_env.config().policy, policy_kind::keel);
  EXPECT_TRUE(from_env.config().expandable_segments);
  for (std::size_t i = 0; i < saved.size(); ++i) {
    if (saved[i]) {
      ::setenv(names[i], saved[i]->c_str(), 1);
    } else {
      ::unsetenv(names[i]);
    }
  }
}

}  // namespace
}  // namespace keel::memory
