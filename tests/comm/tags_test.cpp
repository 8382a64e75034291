// call_options::tag: several operations in flight at once on one communicator, each on its
// own tag, from different threads; ranks as threads over a memory_store, shm and TCP.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "keel/comm/communicator.hpp"
#include "keel/core/error.hpp"
#include "rank_threads.hpp"

namespace keel::comm {
namespace {

using namespace std::chrono_literals;
using test::run_ranks;

options quick(transport t) {
  options o = test::quick_options();
  o.transport_kind = t;
  o.chunk_bytes = 8 * 1024;  // many chunks per message: they interleave on the pairs
  return o;
}

call_options on_tag(std::uint32_t tag) {
  call_options o;
  o.tag = tag;
  return o;
}

class CommTags : public ::testing::TestWithParam<transport> {};

// Rank 0 starts a large allreduce on tag 1, which cannot finish before rank 1 joins it;
// rank 1 joins only after an allreduce on tag 2 has completed on both ranks. So rank 0's
// tag-2 call runs while its tag-1 call is in flight (and rank 0's tag-1 chunks reach rank 1
// before rank 1 has anything on tag 1). A communicator that ran one call at a time would
// deadlock here until the timeout.
TEST_P(CommTags, TwoOperationsInFlightOnDifferentTags) {
  const std::size_t big = 200000, small = 3000;
  std::atomic<int> tag2_done{0};  // ranks whose tag-2 call returned (the ranks are threads)
  const auto errors = run_ranks(2, quick(GetParam()), [&](communicator& c) {
    const float me = static_cast<float>(c.rank() + 1);
    std::vector<float> a(big, me), b(small, 10 * me);
    std::thread t1([&] {
      if (c.rank() == 1) {
        while (tag2_done < 2) std::this_thread::sleep_for(1ms);
      }
      c.allreduce(a.data(), a.data(), big, dtype::f32, reduce_op::sum, on_tag(1));
    });
    std::thread t2([&] {
      if (c.rank() == 0) std::this_thread::sleep_for(50ms);  // tag 1 is in flight by now
      c.allreduce(b.data(), b.data(), small, dtype::f32, reduce_op::sum, on_tag(2));
      ++tag2_done;
    });
    t1.join();
    t2.join();
    EXPECT_EQ(a.front(), 3.0f);
    EXPECT_EQ(a.back(), 3.0f);
    EXPECT_EQ(b.front(), 30.0f);
    EXPECT_EQ(b.back(), 30.0f);
  });
  test::rethrow_first(errors);
}

// Three threads per rank, each with its own tag, run many collectives of different kinds and
// sizes at once, and a fourth does point-to-point on its tag; every result is checked.
TEST_P(CommTags, ManyCallsOnSeveralTagsAtOnce) {
  const auto errors = run_ranks(3, quick(GetParam()), [&](communicator& c) {
    const int n = c.size();
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (std::uint32_t tag = 1; tag <= 3; ++tag) {
      threads.emplace_back([&, tag] {
        for (int i = 0; i < 15; ++i) {
          const std::size_t count = 1 + (tag * 7919 + static_cast<std::size_t>(i) * 104729) % 30000;
          std::vector<std::int32_t> x(count, c.rank() + static_cast<int>(tag));
          if ((i + tag) % 2 == 0) {
            c.allreduce(x.data(), x.data(), count, dtype::i32, reduce_op::sum, on_tag(tag));
            const std::int32_t want = n * (n - 1) / 2 + n * static_cast<int>(tag);
            if (x.front() != want || x.back() != want) ++wrong;
          } else {
            const int root = i % n;
            c.broadcast(x.data(), x.data(), count, dtype::i32, root, on_tag(tag));
            const std::int32_t want = root + static_cast<int>(tag);
            if (x.front() != want || x.back() != want) ++wrong;
          }
        }
      });
    }
    threads.emplace_back([&] {  // a ring of sends on tag 9
      const int next = (c.rank() + 1) % n, prev = (c.rank() + n - 1) % n;
      for (int i = 0; i < 10; ++i) {
        std::vector<std::int64_t> out(5000 + i, c.rank() * 100 + i), in(5000 + i);
        if (c.rank() == 0) {
          c.send(out.data(), out.size(), dtype::i64, next, on_tag(9));
          c.recv(in.data(), in.size(), dtype::i64, prev, on_tag(9));
        } else {
          c.recv(in.data(), in.size(), dtype::i64, prev, on_tag(9));
          c.send(out.data(), out.size(), dtype::i64, next, on_tag(9));
        }
        if (in.front() != prev * 100 + i || in.back() != prev * 100 + i) ++wrong;
      }
    });
    for (auto& t : threads) t.join();
    EXPECT_EQ(wrong, 0);
    c.barrier();  // tag 0 still works afterwards
  });
  test::rethrow_first(errors);
}

// A second call on a tag that is in flight is the caller's mistake: keel::invalid_argument
// naming the tag, and the call in flight is not disturbed.
TEST_P(CommTags, ASecondCallOnABusyTagIsRefused) {
  std::atomic<bool> checked{false};  // rank 0 has tried tag 5 (the ranks are threads)
  const auto errors = run_ranks(2, quick(GetParam()), [&](communicator& c) {
    std::atomic<bool> started{false};
    double x = c.rank() + 1;
    std::thread t([&] {
      if (c.rank() == 1) {
        while (!checked) std::this_thread::sleep_for(1ms);
      }
      started = true;
      c.allreduce(&x, &x, 1, dtype::f64, reduce_op::sum, on_tag(5));
    });
    if (c.rank() == 0) {
      while (!started) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(200ms);  // t claims tag 5 right after `started`
      try {
        c.barrier(on_tag(5));
        ADD_FAILURE() << "a second call on tag 5 ran";
      } catch (const keel::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("tag 5"), std::string::npos) << e.what();
      }
    }
    if (c.rank() == 0) checked = true;
    t.join();
    EXPECT_EQ(x, 3.0);
  });
  test::rethrow_first(errors);
}

INSTANTIATE_TEST_SUITE_P(Threads, CommTags, ::testing::Values(transport::shm, transport::tcp),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace keel::comm
