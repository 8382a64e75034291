// The allocator benchmark: its workloads (the built-in mix and a replayed trace), the names it
// accepts, the tag check that catches overlapping blocks, and one whole run's document and
// table, on small inputs.
#include "keel/memory/allocator_bench.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/memory/snapshot.hpp"

namespace keel::memory {
namespace {

namespace fs = std::filesystem;

// Every alloc has exactly one later free of the same id and size, and ids are below slots.
void expect_balanced(const bench_workload& w) {
  std::vector<std::int64_t> live(w.slots, -1);
  std::size_t allocs = 0;
  std::uint64_t bytes = 0;
  for (const bench_event& e : w.events) {
    ASSERT_LT(e.id, w.slots);
    if (!e.is_free) {
      ASSERT_EQ(live[e.id], -1) << "slot " << e.id << " reused while live";
      live[e.id] = static_cast<std::int64_t>(e.size);
      ++allocs;
      bytes += e.size;
    } else {
      ASSERT_EQ(live[e.id], static_cast<std::int64_t>(e.size));
      live[e.id] = -1;
    }
  }
  for (std::int64_t s : live) EXPECT_EQ(s, -1);
  EXPECT_EQ(allocs, w.pairs);
  EXPECT_EQ(bytes, w.bytes);
  EXPECT_EQ(w.events.size(), 2 * w.pairs);
}

TEST(AllocatorBench, TransformerMixIsBalancedDeterministicAndHalfSmall) {
  const bench_workload w = transformer_mix(1000);
  EXPECT_GE(w.pairs, 1000u);
  expect_balanced(w);
  EXPECT_GT(w.small_pairs, w.pairs / 4);
  EXPECT_LT(w.small_pairs, w.pairs);
  EXPECT_GT(w.peak_live_bytes, std::uint64_t{1} << 30);  // parameters and Adam state
  const bench_workload again = transformer_mix(1000);
  ASSERT_EQ(again.events.size(), w.events.size());
  for (std::size_t i = 0; i < w.events.size(); ++i) {
    EXPECT_EQ(again.events[i].size, w.events[i].size);
    EXPECT_EQ(again.events[i].id, w.events[i].id);
    EXPECT_EQ(again.events[i].is_free, w.events[i].is_free);
  }
}

class TraceWorkload : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("keel-bench-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const snapshot& s, const std::string& name) {
    const fs::path p = dir_ / name;
    std::ofstream out(p);
    write_snapshot_json(s, out);
    return p.string();
  }
  fs::path dir_;
};

trace_entry entry(trace_action a, std::uint64_t addr, std::uint64_t size) {
  trace_entry e;
  e.action = a;
  e.addr = addr;
  e.size = size;
  return e;
}

TEST_F(TraceWorkload, ReplaysAllocsAndRequestedFreesAndFreesTheRestAtTheEnd) {
  snapshot s;
  s.device_traces.push_back({
      entry(trace_action::free_requested, 0x9000, 64),  // allocated before the window: skipped
      entry(trace_action::alloc, 0x1000, 100), entry(trace_action::alloc, 0x2000, 200),
      entry(trace_action::free_requested, 0x1000, 100),
      entry(trace_action::free_completed, 0x1000, 100),  // not a second free
      entry(trace_action::alloc, 0x3000, 300),           // never freed: freed at the end
      entry(trace_action::alloc, 0x4000, 0),             // empty: not replayed
  });
  const std::string path = write(s, "trace.json");
  const bench_workload w = trace_workload(path, 0);
  EXPECT_EQ(w.source, path);
  EXPECT_EQ(w.pairs, 3u);
  expect_balanced(w);
  EXPECT_EQ(w.bytes, 600u);
  EXPECT_EQ(w.peak_live_bytes, 500u);  // 200 + 300 after the first block's free
  ASSERT_EQ(w.events.size(), 6u);
  EXPECT_TRUE(w.events[2].is_free);  // the free of 0x1000 where the trace has it
  EXPECT_EQ(w.events[2].size, 100u);

  const bench_workload repeated = trace_workload(path, 7);
  EXPECT_EQ(repeated.pairs, 9u);  // whole passes until at least 7
  expect_balanced(repeated);
}

TEST_F(TraceWorkload, RefusesASnapshotWithoutAllocs) {
  snapshot s;
  s.device_traces.push_back({entry(trace_action::free_requested, 0x1000, 64)});
  const std::string path = write(s, "empty.json");
  try {
    trace_workload(path, 0);
    FAIL() << "expected invalid_argument";
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no alloc events to replay"), std::string::npos);
  }
  EXPECT_THROW(trace_workload((dir_ / "missing.json").string(), 0), keel::error);
}

TEST(AllocatorBench, AllocatorNames) {
  EXPECT_EQ(parse_bench_allocators("glibc,,keel"), (std::vector<std::string>{"glibc", "keel"}));
  EXPECT_EQ(parse_bench_allocators("keel,pytorch,glibc,jemalloc,mimalloc"),
            bench_allocator_names());
  EXPECT_THROW(parse_bench_allocators("keel,tcmalloc"), invalid_argument);
  EXPECT_THROW(parse_bench_allocators(",,"), invalid_argument);
  std::string error;
  EXPECT_THROW(make_bench_allocator("tcmalloc", 1 << 30, error), invalid_argument);
  EXPECT_TRUE(needs_static_tls("libjemalloc.so.2: cannot allocate memory in static TLS block"));
  EXPECT_FALSE(needs_static_tls("cannot load libjemalloc.so.2: no such file"));
}

// Hands out the same block twice in a row: the second allocation's tags overwrite the first's.
class overlapping_allocator final : public bench_allocator {
 public:
  void* allocate(std::size_t) override { return block_.data(); }
  void deallocate(void*) override {}

 private:
  std::vector<std::uint8_t> block_ = std::vector<std::uint8_t>(1 << 20);
};

TEST(AllocatorBench, MeasureCatchesOverlappingBlocks) {
  bench_workload w;
  w.source = "two live blocks";
  w.events = {{64, 0, false}, {64, 1, false}, {64, 1, true}, {64, 0, true}};
  w.slots = 2;
  w.pairs = 2;
  overlapping_allocator a;
  EXPECT_THROW(measure(w, a, 1, 1), std::runtime_error);
}

TEST(AllocatorBench, MeasureTimesEveryPassOfTheCachingAllocator) {
  const bench_workload w = transformer_mix(300);
  std::string error;
  auto a = make_bench_allocator("keel", std::size_t{16} << 30, error);
  ASSERT_TRUE(a) << error;
  const bench_timing t = measure(w, *a, 2, 3);
  ASSERT_EQ(t.cpu_ns_per_op.size(), 3u);
  ASSERT_EQ(t.wall_ns_per_op.size(), 3u);
  for (double ns : t.cpu_ns_per_op) EXPECT_GT(ns, 0.0);
  EXPECT_EQ(t.context.at("config").get<std::string>().find("policy:keel"), 0u) << t.context.dump();
  EXPECT_GT(t.context.at("peak_reserved_bytes").get<std::uint64_t>(), 0u);
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 2.0, 3.0}), 2.5);
}

TEST(AllocatorBench, RunReportsEveryAllocatorAgainstKeel) {
  bench_options o;
  o.allocators = "keel,glibc";
  o.ops = 200;
  o.repeat = 1;
  o.capacity = std::size_t{16} << 30;
  const bench_result r = run_allocator_bench(o);
  const nlohmann::json& doc = r.document;
  EXPECT_EQ(r.source, "built-in transformer training-step mix");
  EXPECT_EQ(doc.at("workload").at("pairs").get<std::size_t>(), r.pairs);
  EXPECT_EQ(doc.at("capacity_bytes").get<std::size_t>(), o.capacity);
  ASSERT_EQ(doc.at("results").size(), 2u);
  EXPECT_EQ(doc["results"][0]["allocator"], "keel");
  EXPECT_EQ(doc["results"][0]["vs_keel"].get<double>(), 1.0);
  EXPECT_EQ(doc["results"][1]["context"]["library"], "libc.so.6");
  EXPECT_TRUE(doc.at("targets").contains("keel_over_glibc"));
  EXPECT_FALSE(doc.at("targets").contains("keel_over_mimalloc"));

  const std::string text = to_text(r);
  EXPECT_EQ(text.find("workload: built-in transformer training-step mix\n"), 0u) << text;
  EXPECT_NE(text.find("allocator   ns/op (cpu)   ns/op (wall)    vs keel\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nglibc "), std::string::npos) << text;
  EXPECT_NE(text.find("; keel / glibc = "), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace keel::memory
