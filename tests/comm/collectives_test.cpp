// Ranks as threads over a memory_store: the quick correctness slice over shm and over TCP,
// plus the failure modes (mismatch, timeout, abort propagation) and the algorithm choice.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "algorithms.hpp"
#include "keel/comm/communicator.hpp"
#include "keel/comm/selftest.hpp"
#include "keel/core/error.hpp"
#include "keel/core/log.hpp"
#include "net.hpp"
#include "rank_threads.hpp"

namespace keel::comm {
namespace {

using namespace std::chrono_literals;
using test::run_ranks;

options quick(transport t) {
  options o;
  o.transport_kind = t;
  o.timeout = 20s;
  o.chunk_bytes = 8 * 1024;  // small chunks: many pipeline steps even on small inputs
  o.tune = false;
  return o;
}

struct slice_param {
  int ranks;
  transport kind;
};

class CommSlice : public ::testing::TestWithParam<slice_param> {};

TEST_P(CommSlice, EveryCollectiveAlgorithmAndDtypeMatchesTheReference) {
  const auto [ranks, kind] = GetParam();
  const std::vector<test_case> cases = case_matrix(ranks, false, 1 << 20);
  std::mutex mutex;
  std::vector<std::string> failures;
  const auto errors = run_ranks(ranks, quick(kind), [&](communicator& c) {
    for (const test_case& t : cases) {
      const std::size_t wrong = run_case(c, t);
      if (wrong) {
        std::lock_guard lock(mutex);
        failures.push_back(fmt::format("rank {}: {}: {} wrong", c.rank(), describe(t), wrong));
      }
    }
  });
  test::rethrow_first(errors);
  for (const auto& f : failures) ADD_FAILURE() << f;
  EXPECT_GT(cases.size(), 100u);
}

INSTANTIATE_TEST_SUITE_P(
    Threads, CommSlice,
    ::testing::Values(slice_param{1, transport::auto_select}, slice_param{2, transport::shm},
                      slice_param{3, transport::shm}, slice_param{4, transport::shm},
                      slice_param{2, transport::tcp}, slice_param{3, transport::tcp}),
    [](const auto& info) {
      return fmt::format("{}ranks_{}", info.param.ranks, to_string(info.param.kind));
    });

TEST(CommCaseMatrix, ASmallMaxBytesNarrowsTheSizesNotTheMatrix) {
  // A size that does not fit is replaced by one that does: --max-bytes 4K once gave 4 cases.
  for (const std::size_t max_bytes : {std::size_t{0}, std::size_t{4096}, std::size_t{1} << 20}) {
    const auto cases = case_matrix(3, false, max_bytes);
    EXPECT_EQ(cases.size(), case_matrix(3, false, 1 << 20).size()) << max_bytes;
    for (const test_case& t : cases) {
      const bool per_rank = t.coll == collective::reduce_scatter ||
                            t.coll == collective::allgather || t.coll == collective::alltoall;
      EXPECT_LE(t.count * dtype_size(t.type) * (per_rank ? 3 : 1), max_bytes) << describe(t);
    }
  }
}

TEST(CommCollectives, LargeRingAllreduceOverManyChunks) {
  // 4 MiB of floats, 64 KiB chunks, 2 slots: the pipeline wraps the rings many times.
  options o = quick(transport::shm);
  o.chunk_bytes = 64 * 1024;
  o.shm_slots = 2;
  for (algorithm a : {algorithm::ring, algorithm::tree, algorithm::rabenseifner}) {
    test_case t{collective::allreduce, a, dtype::f32, reduce_op::sum, (1u << 20) + 5, 0, false};
    const auto errors = run_ranks(3, o, [&](communicator& c) { EXPECT_EQ(run_case(c, t), 0u); });
    test::rethrow_first(errors);
  }
}

TEST(CommCollectives, DifferentCollectivesRaiseMismatch) {
  for (transport kind : {transport::shm, transport::tcp}) {
    const auto errors = run_ranks(2, quick(kind), [&](communicator& c) {
      std::vector<float> a(64, 1.0f), b(64);
      if (c.rank() == 0) {
        c.allreduce(a.data(), b.data(), 64, dtype::f32, reduce_op::sum);
      } else {
        c.broadcast(a.data(), b.data(), 64, dtype::f32, 0);
      }
    });
    ASSERT_TRUE(errors[0] && errors[1]);
    try {
      std::rethrow_exception(errors[1]);
    } catch (const mismatch_error& e) {
      EXPECT_EQ(e.rank(), 0);
      EXPECT_EQ(e.seq(), 1u);
      EXPECT_NE(std::string(e.what()).find("allreduce #1"), std::string::npos) << e.what();
    }
    try {
      std::rethrow_exception(errors[0]);
    } catch (const comm_error& e) {
      EXPECT_EQ(e.seq(), 1u) << e.what();
    }
  }
}

TEST(CommCollectives, DifferentSizesRaiseMismatch) {
  const auto errors = run_ranks(3, quick(transport::shm), [&](communicator& c) {
    std::vector<std::int32_t> a(100, 1), b(100);
    c.barrier();
    c.allreduce(a.data(), b.data(), c.rank() == 2 ? 99 : 100, dtype::i32, reduce_op::sum);
  });
  int mismatches = 0;
  for (const auto& e : errors) {
    ASSERT_TRUE(e);
    try {
      std::rethrow_exception(e);
    } catch (const mismatch_error& m) {
      ++mismatches;
      EXPECT_EQ(m.seq(), 2u);
    } catch (const peer_error& p) {
      EXPECT_EQ(p.seq(), 2u);
    }
  }
  EXPECT_GE(mismatches, 1);
}

TEST(CommCollectives, MissingRankTimesOutNamingIt) {
  for (transport kind : {transport::shm, transport::tcp}) {
    options o = quick(kind);
    std::atomic<bool> done{false};
    const auto errors = run_ranks(3, o, [&](communicator& c) {
      std::vector<double> a(10, 1.0), b(10);
      c.allreduce(a.data(), b.data(), 10, dtype::f64, reduce_op::sum);  // seq 1: everyone
      if (c.rank() == 2) {
        while (!done) std::this_thread::sleep_for(5ms);  // stalls, but stays alive
        return;
      }
      const auto t0 = std::chrono::steady_clock::now();
      try {
        call_options co;
        co.algo = algorithm::ring;
        co.timeout = std::chrono::milliseconds(300);
        c.allreduce(a.data(), b.data(), 10, dtype::f64, reduce_op::sum, co);
        ADD_FAILURE() << "no error";
      } catch (const comm_error& e) {
        const auto took = std::chrono::steady_clock::now() - t0;
        EXPECT_LT(took, 1300ms) << e.what();
        EXPECT_EQ(e.seq(), 2u);
        EXPECT_EQ(e.collective(), "allreduce");
        // Over shm the stall is traced to its root; over TCP a rank can only name the
        // neighbour it waits for (or the culprit an aborting peer reports).
        if (kind == transport::shm) {
          EXPECT_EQ(e.rank(), 2) << e.what();
        } else {
          EXPECT_NE(e.rank(), c.rank()) << e.what();
        }
      }
      // Aborted: later calls fail at once.
      EXPECT_THROW(c.barrier(), peer_error);
      if (c.rank() == 0) done = true;
    });
    test::rethrow_first(errors);
  }
}

// A rank's TCP listener is open to anyone during bootstrap. A connection that never sends
// its hello, one that closes at once and ones that send garbage must not hold up the real
// peers (the old accept loop waited for each hello in turn, so one silent connection stalled
// rank 0 until its deadline, and one that closed threw out of the constructor).
TEST(CommCollectives, StrayConnectionsDoNotStallTheTcpBootstrap) {
  memory_store store;
  options o;
  o.transport_kind = transport::tcp;
  o.timeout = 4s;
  o.tune = false;
  o.name = "stray";
  std::atomic<bool> attacked{false}, done{false};
  std::vector<int> strays;
  std::thread attacker([&] {
    const std::string info = store.get_string("stray/info/0", 10s);
    const std::string port_text = info.substr(info.find('|', info.find('|') + 1) + 1);
    const auto port =
        static_cast<std::uint16_t>(std::stoi(port_text.substr(0, port_text.find('|'))));
    for (int kind = 0; kind < 4; ++kind) {
      const int fd = net::connect_to("127.0.0.1", port, net::clock::now() + 5s);
      if (fd < 0) continue;
      if (kind == 1) {
        ::close(fd);  // connects and leaves
        continue;
      }
      if (kind >= 2) {
        const std::string junk(kind == 2 ? 24 : 10, 'j');  // a whole wrong hello, or part of one
        [[maybe_unused]] auto w = ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
      }
      strays.push_back(fd);
    }
    attacked = true;
    while (!done) std::this_thread::sleep_for(10ms);
    for (int fd : strays) ::close(fd);
  });
  std::vector<std::exception_ptr> errors(2);
  std::vector<double> sums(2, 0);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      try {
        if (r == 1) {
          while (!attacked) std::this_thread::sleep_for(1ms);
        }
        communicator c(store, r, 2, o);
        double x = r + 1;
        c.allreduce(&x, &sums[r], 1, dtype::f64, reduce_op::sum);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : ranks) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  done = true;
  attacker.join();
  test::rethrow_first(errors);
  EXPECT_EQ(sums[0], 3);
  EXPECT_EQ(sums[1], 3);
  EXPECT_LT(seconds, 3.0) << "bootstrap waited on a stray connection";
}

TEST(CommCollectives, ChoiceIsLoggedAndOverridable) {
  std::mutex mutex;
  std::vector<std::string> lines;
  set_log_level(log_level::info);
  set_log_sink([&](log_level, std::string_view module, std::string_view message) {
    std::lock_guard lock(mutex);
    lines.emplace_back(std::string(module) + ": " + std::string(message));
  });
  options o = quick(transport::shm);
  o.tune = true;
  const auto errors = run_ranks(4, o, [&](communicator& c) {
    std::vector<float> a(16, 1.0f), b(16);
    c.allreduce(a.data(), b.data(), 16, dtype::f32, reduce_op::sum);
    EXPECT_TRUE(c.model().measured);
    // Small messages: a latency-bound algorithm; large: a bandwidth-bound one.
    const choice small = c.choose(collective::allreduce, 8);
    const choice large = c.choose(collective::allreduce, 64u << 20);
    EXPECT_NE(small.algo, algorithm::reducer);
    EXPECT_TRUE(large.algo == algorithm::ring || large.algo == algorithm::rabenseifner)
        << large.why;
    EXPECT_EQ(c.choose(collective::allreduce, 8, algorithm::tree).algo, algorithm::tree);
    // Not applicable: falls back to the model and says so.
    const choice bad = c.choose(collective::alltoall, 8, algorithm::ring);
    EXPECT_EQ(bad.algo, algorithm::direct);
  });
  set_log_sink({});
  set_log_level(log_level::warn);
  test::rethrow_first(errors);
  bool chose = false, model = false;
  for (const auto& l : lines) {
    chose |= l.find("chose") != std::string::npos && l.find("allreduce") != std::string::npos;
    model |= l.find("cost model") != std::string::npos;
  }
  EXPECT_TRUE(chose);
  EXPECT_TRUE(model);
}

TEST(CommCollectives, EnvironmentOverridesOptions) {
  ::setenv("KEEL_COMM_ALGO", "rabenseifner", 1);
  ::setenv("KEEL_COMM_TIMEOUT", "2.5", 1);
  ::setenv("KEEL_COMM_CHUNK", "128K", 1);
  const options o = options::from_env();
  ::unsetenv("KEEL_COMM_ALGO");
  ::unsetenv("KEEL_COMM_TIMEOUT");
  ::unsetenv("KEEL_COMM_CHUNK");
  EXPECT_EQ(o.algo, algorithm::rabenseifner);
  EXPECT_EQ(o.timeout, 2500ms);
  EXPECT_EQ(o.chunk_bytes, 128u * 1024);
  ::setenv("KEEL_COMM_TIMEOUT", "soon", 1);
  EXPECT_THROW(options::from_env(), keel::invalid_argument);
  ::unsetenv("KEEL_COMM_TIMEOUT");
}

// The idle policy's variables are read strictly: "5ms", "", "-1" or " 7" used to become 5, 0,
// 0 and 7 through atoi; now every rank refuses them with one line naming the variable.
TEST(CommCollectives, IdlePolicyVariablesAreParsedStrictly) {
  for (const char* name : {"KEEL_COMM_SPIN_US", "KEEL_COMM_YIELD_US"}) {
    for (const char* bad : {"5ms", "-1", " 7", "99999999999999999999", "0x10", "1e3"}) {
      ::setenv(name, bad, 1);
      const auto errors = run_ranks(2, quick(transport::shm), [](communicator&) {});
      ::unsetenv(name);
      for (const auto& e : errors) {
        ASSERT_TRUE(e) << name << "=" << bad;
        try {
          std::rethrow_exception(e);
        } catch (const keel::invalid_argument& x) {
          const std::string what = x.what();
          EXPECT_NE(what.find(name), std::string::npos) << what;
          EXPECT_EQ(what.find('\n'), std::string::npos) << what;
        }
      }
    }
  }
  ::setenv("KEEL_COMM_SPIN_US", "0", 1);
  ::setenv("KEEL_COMM_YIELD_US", "250", 1);
  const auto errors = run_ranks(2, quick(transport::shm), [](communicator& c) {
    double x = 1;
    c.allreduce(&x, &x, 1, dtype::f64, reduce_op::sum);
    EXPECT_EQ(x, 2);
  });
  ::unsetenv("KEEL_COMM_SPIN_US");
  ::unsetenv("KEEL_COMM_YIELD_US");
  test::rethrow_first(errors);
}

TEST(CommCollectives, SendRecvOrderedPerPeer) {
  const auto errors = run_ranks(2, quick(transport::shm), [&](communicator& c) {
    for (int i = 0; i < 20; ++i) {
      std::vector<std::int64_t> v(1000 + i, c.rank() * 1000 + i);
      if (c.rank() == 0) {
        c.send(v.data(), v.size(), dtype::i64, 1);
      } else {
        std::vector<std::int64_t> got(v.size());
        c.recv(got.data(), got.size(), dtype::i64, 0);
        EXPECT_EQ(got.front(), i);
        EXPECT_EQ(got.back(), i);
      }
    }
    c.barrier();
  });
  test::rethrow_first(errors);
}

// A job on two "hosts" of two ranks each (options::host_id): shm inside a host, TCP across,
// so every rank waits on both devices at once. Every collective must work, and a rank that
// waits makes one blocking wait on both (its shm doorbell's FIFO and its sockets in one
// epoll), not the 1 ms polling mixed jobs used to do: waiting ~300 ms for a late peer costs
// it a handful of context switches, not hundreds.
TEST(CommCollectives, MixedShmAndTcpJobWaitsWithoutPolling) {
  ::setenv("KEEL_COMM_SPIN_US", "0", 1);
  ::setenv("KEEL_COMM_YIELD_US", "0", 1);
  memory_store store;
  constexpr int n = 4;
  std::vector<std::exception_ptr> errors(n);
  std::vector<long> switches(n, -1);
  std::atomic<int> constructed{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        options o = quick(transport::auto_select);
        o.host_id = r < 2 ? "host-a" : "host-b";
        communicator c(store, r, n, o);
        ++constructed;
        EXPECT_EQ(c.transport_to(r ^ 1), transport::shm);
        EXPECT_EQ(c.transport_to(r ^ 2), transport::tcp);
        for (collective coll : {collective::allreduce, collective::reduce, collective::broadcast,
                                collective::reduce_scatter, collective::allgather,
                                collective::alltoall, collective::barrier}) {
          for (algorithm a : algorithms_for(coll)) {
            for (std::size_t count : {std::size_t{3}, std::size_t{70000}}) {
              const test_case t{coll, a, dtype::f32, reduce_op::sum, count, 1, false};
              EXPECT_EQ(run_case(c, t), 0u) << describe(t);
            }
          }
        }
        std::vector<float> x(1000, 1.0f);
        if (r == 3) std::this_thread::sleep_for(300ms);
        rusage before{}, after{};
        ::getrusage(RUSAGE_THREAD, &before);
        call_options ring;
        ring.algo = algorithm::ring;
        c.allreduce(x.data(), x.data(), x.size(), dtype::f32, reduce_op::sum, ring);
        ::getrusage(RUSAGE_THREAD, &after);
        switches[r] = after.ru_nvcsw - before.ru_nvcsw;
        EXPECT_EQ(x[0], 4.0f);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  ::unsetenv("KEEL_COMM_SPIN_US");
  ::unsetenv("KEEL_COMM_YIELD_US");
  test::rethrow_first(errors);
  EXPECT_EQ(constructed, n);
  // Rank 0 waits for rank 3 (TCP) while its shm neighbour is there: ~300 ms of waiting.
  EXPECT_LT(switches[0], 60) << "context switches while waiting";
}

TEST(CommCollectives, TreesAreNcclsDoubleBinaryTree) {
  for (int n = 2; n <= 33; ++n) {
    std::vector<int> children_in(n, 0);  // children over both trees
    for (int t = 0; t < 2; ++t) {
      int roots = 0;
      std::vector<int> seen_as_child(n, 0);
      for (int r = 0; r < n; ++r) {
        const detail::tree_links l = detail::dtree(n, r, t);
        if (l.parent < 0) ++roots;
        for (int c : {l.child0, l.child1}) {
          if (c < 0) continue;
          ASSERT_LT(c, n);
          EXPECT_EQ(detail::dtree(n, c, t).parent, r) << "n=" << n << " tree " << t;
          ++seen_as_child[c];
        }
        children_in[r] += (l.child0 >= 0) + (l.child1 >= 0);
      }
      EXPECT_EQ(roots, 1) << n;
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(seen_as_child[r], detail::dtree(n, r, t).parent >= 0 ? 1 : 0) << n;
      }
    }
    // The point of two trees: no rank feeds more than two children in total, so the two
    // half-size trees together cost each rank about what one tree costs an inner node.
    for (int r = 0; r < n; ++r) EXPECT_LE(children_in[r], 2) << "n=" << n << " rank " << r;
  }
}

}  // namespace
}  // namespace keel::comm
