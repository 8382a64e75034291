// Hostile input after parsing (issue 15): memo bombs against the snapshot converter, sizes near
// 2^64 through the allocator, the trace model, the replay and the stats, and snapshots that
// parse but say impossible things. Each reproducer ends in a keel exception that names the
// place, or in a correct answer. The hostile pickles are generated here: `pickler` writes raw
// opcodes (the memo bombs), write_snapshot_pickle writes the rest.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>

#include "keel/core/check.hpp"
#include "keel/core/error.hpp"
#include "keel/memory/analysis.hpp"
#include "keel/memory/caching_allocator.hpp"
#include "keel/memory/host_backend.hpp"
#include "keel/memory/memory_stats.hpp"
#include "keel/memory/replay.hpp"
#include "keel/memory/sim_backend.hpp"
#include "keel/memory/snapshot.hpp"
#include "keel/memory/trace_model.hpp"

namespace keel::memory {
namespace {

constexpr std::uint64_t k_mib = 1u << 20;
constexpr std::uint64_t k_max_u64 = std::numeric_limits<std::uint64_t>::max();

// Protocol-4 opcodes, written one by one.
class pickler {
 public:
  pickler() : out_("\x80\x04", 2) {}
  pickler& dict() { return op('}'); }
  pickler& list() { return op(']'); }
  pickler& mark() { return op('('); }
  pickler& setitems() { return op('u'); }
  pickler& setitem() { return op('s'); }
  pickler& appends() { return op('e'); }
  pickler& str(std::string_view s) {
    if (s.size() < 256) {
      op('\x8c');
      out_ += static_cast<char>(s.size());
    } else {
      op('X');
      le(s.size(), 4);
    }
    out_ += s;
    return *this;
  }
  pickler& integer(std::uint64_t v) {  // LONG1, 9 bytes: any uint64
    op('\x8a');
    out_ += '\x09';
    le(v, 8);
    out_ += '\0';
    return *this;
  }
  pickler& key(std::string_view k, std::uint64_t v) { return str(k).integer(v); }
  pickler& key(std::string_view k, std::string_view v) { return str(k).str(v); }
  std::uint32_t memoize() {
    op('\x94');
    return next_++;
  }
  pickler& get(std::uint32_t index) {
    if (index < 256) {
      op('h');
      out_ += static_cast<char>(index);
    } else {
      op('j');
      le(index, 4);
    }
    return *this;
  }
  std::string done() { return out_ + '.'; }

 private:
  pickler& op(char c) {
    out_ += c;
    return *this;
  }
  void le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  std::string out_;
  std::uint32_t next_ = 0;
};

snapshot parse(const std::string& bytes) {
  return parse_snapshot_pickle(std::as_bytes(std::span(bytes.data(), bytes.size())), "hostile");
}

std::string to_pickle(const snapshot& s) {
  std::ostringstream out;
  write_snapshot_pickle(s, out);
  return out.str();
}

// The message of the parse_error `bytes` raises ("" when it parses).
std::string parse_failure(const std::string& bytes) {
  try {
    parse(bytes);
  } catch (const parse_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// {"segments": [seg] * segments} where seg has `blocks` references to one 512-byte block
// without an address (a 2.0-era block: placed by the running sum, so the blocks tile).
std::string segment_bomb(std::uint32_t segments, std::uint32_t blocks) {
  pickler p;
  p.dict();
  p.memoize();
  p.str("segments");
  p.list();
  p.memoize();
  p.mark();
  p.dict();
  const std::uint32_t seg = p.memoize();
  p.mark().key("address", 1u << 30).key("total_size", 512ull * blocks).str("blocks");
  p.list();
  p.memoize();
  p.mark();
  p.dict();
  const std::uint32_t block = p.memoize();
  p.mark().key("size", 512).key("state", "active_allocated").setitems();
  for (std::uint32_t i = 1; i < blocks; ++i) p.get(block);
  p.appends();
  p.setitems();
  for (std::uint32_t i = 1; i < segments; ++i) p.get(seg);
  p.appends();
  p.setitem();
  return p.done();
}

// One segment whose block's frames are `frames` references to one frame (a `filename` of
// `name_bytes` bytes).
std::string frame_bomb(std::uint32_t frames, std::size_t name_bytes) {
  pickler p;
  p.dict();
  p.memoize();
  p.str("segments");
  p.list();
  p.memoize();
  p.mark();
  p.dict();
  p.memoize();
  p.mark().key("address", 1u << 30).key("total_size", 2 * k_mib).str("blocks");
  p.list();
  p.memoize();
  p.mark();
  p.dict();
  p.memoize();
  p.mark().key("address", 1u << 30).key("size", 2 * k_mib).key("state", "inactive");
  p.str("frames");
  p.list();
  p.memoize();
  p.mark();
  p.dict();
  const std::uint32_t frame = p.memoize();
  p.mark().key("filename", std::string(name_bytes, 'f')).key("line", 1).key("name", "g").setitems();
  for (std::uint32_t i = 1; i < frames; ++i) p.get(frame);
  p.appends();
  p.setitems();
  p.appends();
  p.setitems();
  p.appends();
  p.setitem();
  return p.done();
}

// --- 1. billion laughs at the snapshot level ---

TEST(HostileSnapshot, SegmentMemoBombStopsAtTheBudget) {
  // The two reproducers: 2,000 x 2,000 (8 KB, was 196 MB and 25 s under ASan) and
  // 20,000 x 20,000 (80 KB, was > 20 GB).
  for (const std::uint32_t n : {2'000u, 20'000u}) {
    SCOPED_TRACE(n);
    const std::string bytes = segment_bomb(n, n);
    EXPECT_LT(bytes.size(), 100'000u);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string error = parse_failure(bytes);
    EXPECT_TRUE(contains(error, "budget")) << error;
    EXPECT_TRUE(contains(error, "segments[")) << error;
    EXPECT_TRUE(contains(error, "shared references")) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line";
    EXPECT_LT(seconds_since(t0), 5.0);
  }
  // Sharing within the budget still reads: 4 references to a segment of 4 blocks.
  const snapshot small = parse(segment_bomb(1, 4));
  ASSERT_EQ(small.segments.size(), 1u);
  EXPECT_EQ(small.segments[0].blocks.size(), 4u);
  EXPECT_EQ(small.segments[0].blocks[3].address, (1u << 30) + 3 * 512u);
}

TEST(HostileSnapshot, FrameStringBombStopsAtTheBudget) {
  // 20,000 references to one frame with a 64 KiB filename would copy 1.3 GB of strings.
  const auto t0 = std::chrono::steady_clock::now();
  const std::string error = parse_failure(frame_bomb(20'000, 64 * 1024));
  EXPECT_TRUE(contains(error, "budget")) << error;
  EXPECT_TRUE(contains(error, "segments[0].blocks[0]")) << error;
  EXPECT_LT(seconds_since(t0), 5.0);
  // A deep stack of one short frame is fine.
  const snapshot s = parse(frame_bomb(2'000, 10));
  EXPECT_EQ(s.segments[0].blocks[0].frames.size(), 2'000u);
}

TEST(HostileSnapshot, SharedStacksStayShared) {
  // 100,000 trace entries, each a dict of its own, all naming one 40-frame stack through the
  // memo (what PyTorch writes): one stack is built and every entry shares it.
  pickler p;
  p.dict();
  p.memoize();
  p.mark().str("segments").list();
  p.memoize();
  p.str("device_traces").list();
  p.memoize();
  p.mark().list();
  p.memoize();
  p.mark();
  std::uint32_t frames = 0;
  for (int i = 0; i < 100'000; ++i) {
    p.dict();
    p.memoize();
    p.mark().key("action", "alloc").key("addr", (1ull << 40) + 512ull * i).key("size", 512);
    p.str("frames");
    if (i == 0) {
      p.list();
      frames = p.memoize();
      p.mark();
      for (int f = 0; f < 40; ++f) {
        p.dict();
        p.memoize();
        p.mark().key("filename", "model.py").key("line", 10 + f).key("name", "forward");
        p.setitems();
      }
      p.appends();
    } else {
      p.get(frames);
    }
    p.setitems();
  }
  p.appends();
  p.appends();
  p.setitems();
  const auto t0 = std::chrono::steady_clock::now();
  const snapshot s = parse(p.done());
  ASSERT_EQ(s.device_traces.size(), 1u);
  ASSERT_EQ(s.device_traces[0].size(), 100'000u);
  EXPECT_EQ(s.device_traces[0][0].frames.size(), 40u);
  EXPECT_EQ(s.device_traces[0][0].frames.identity(), s.device_traces[0][99'999].frames.identity());
  EXPECT_LT(seconds_since(t0), 5.0);
}

// --- 2. size arithmetic near 2^64 ---

TEST(HostileSizes, HostAllocatorRefusesRequestsAboveTheDeviceLimit) {
  host_backend device(64 * k_mib);
  caching_allocator a(device, {});
  for (const std::size_t size : {std::numeric_limits<std::size_t>::max() - 100,
                                 std::numeric_limits<std::size_t>::max(), k_max_device_bytes + 1}) {
    SCOPED_TRACE(size);
    try {
      a.allocate(size);
      FAIL() << "served";
    } catch (const out_of_memory& e) {
      EXPECT_TRUE(contains(e.what(), "more than any device has")) << e.what();
    }
  }
  // The next allocations are real, distinct blocks (they used to alias a 0-byte one).
  const std::uint64_t x = a.allocate(4096);
  const std::uint64_t y = a.allocate(4096);
  EXPECT_NE(x, y);
  EXPECT_EQ(y, x + 4096);
  EXPECT_EQ(a.check_invariants(), "");
  EXPECT_EQ(a.stats().allocation[k_all].current, 2);
  EXPECT_EQ(a.stats().num_ooms, 0);
  a.deallocate(x);
  a.deallocate(y);
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(HostileSizes, AllocatorNeverHoldsMoreThanTheDeviceLimit) {
  sim_backend device;  // unlimited capacity
  caching_allocator a(device, {});
  const std::uint64_t x = a.allocate(k_max_device_bytes);
  EXPECT_THROW(a.allocate(k_max_device_bytes), out_of_memory);
  EXPECT_THROW(a.allocate(1), out_of_memory);  // even a 2 MiB segment would exceed the cap
  EXPECT_EQ(a.check_invariants(), "");
  const memory_stats s = a.stats();
  EXPECT_EQ(s.reserved_bytes[k_all].current, static_cast<std::int64_t>(k_max_device_bytes));
  EXPECT_EQ(s.num_ooms, 2);
  a.deallocate(x);
  a.empty_cache();
  EXPECT_NE(a.allocate(4096), 0u);
  EXPECT_EQ(a.check_invariants(), "");
  // Expandable segments obey the same cap.
  sim_backend paged;
  caching_allocator e(paged, allocator_config::parse("expandable_segments:True"));
  EXPECT_THROW(e.allocate(k_max_device_bytes + 1), out_of_memory);
  EXPECT_NE(e.allocate(100 * k_mib), 0u);
  EXPECT_EQ(e.check_invariants(), "");
}

TEST(HostileSizes, RoundingSaturatesInsteadOfWrapping) {
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  allocator_config plain;
  EXPECT_EQ(plain.round_size(max), max);
  EXPECT_EQ(plain.round_size(max - 100), max);
  EXPECT_EQ(plain.round_size(k_max_device_bytes), k_max_device_bytes);
  EXPECT_EQ(caching_allocator::allocation_size(max), max);
  EXPECT_EQ(caching_allocator::allocation_size(max - 100), max);
  EXPECT_EQ(caching_allocator::allocation_size(k_max_device_bytes), k_max_device_bytes);
  allocator_config four = allocator_config::parse("roundup_power2_divisions:4");
  for (const std::size_t size :
       {max, max - 5, (std::size_t{1} << 63) + 1, k_max_device_bytes + 1}) {
    EXPECT_GE(four.round_size(size), size) << size;
  }
  EXPECT_EQ(four.round_size((std::size_t{1} << 63) + 1),
            (std::size_t{1} << 63) + (std::size_t{1} << 61));
  // Divisions so large that 512 * divisions wraps: below 512 * divisions, plain 512 rounding.
  allocator_config huge;
  huge.roundup_power2_divisions.fill(std::size_t{1} << 60);
  EXPECT_EQ(huge.round_size(3 * k_mib + 1), 3 * k_mib + 512);
  // max_non_split_rounding_size near SIZE_MAX: size + limit used to wrap and refuse the fit.
  sim_backend device;
  allocator_config c = allocator_config::parse("max_split_size_mb:100");
  c.max_non_split_rounding_size = max;
  caching_allocator a(device, c);
  const std::uint64_t big = a.allocate(200 * k_mib);
  a.deallocate(big);
  EXPECT_EQ(a.allocate(150 * k_mib), big);  // the cached 200 MiB block, not a new segment
  EXPECT_EQ(a.stats().segment[k_all].current, 1);
  EXPECT_EQ(a.check_invariants(), "");
  // A memory fraction of a device with "unlimited" capacity (2^64 bytes as a double).
  caching_allocator f(device, allocator_config::parse("garbage_collection_threshold:0.5"));
  f.set_memory_fraction(1.0);
  EXPECT_NE(f.allocate(4096), 0u);
  EXPECT_EQ(f.check_invariants(), "");
}

TEST(HostileSizes, StatsSaturateInsteadOfWrapping) {
  stat s;
  s.increase(std::numeric_limits<std::int64_t>::max());
  s.decrease(std::numeric_limits<std::int64_t>::max());
  s.increase(5);
  EXPECT_EQ(s.current, 5);
  EXPECT_EQ(s.peak, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(s.allocated, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(s.freed, std::numeric_limits<std::int64_t>::max());
}

TEST(HostileSizes, DcheckIsDebugOnly) {
  int evaluated = 0;
  const auto touch = [&] { return ++evaluated > 0; };
  KEEL_DCHECK(touch(), "never fails: {}", evaluated);
#if defined(NDEBUG)
  EXPECT_EQ(evaluated, 0) << "a release build evaluates nothing";
#else
  EXPECT_EQ(evaluated, 1);
  EXPECT_DEATH(KEEL_DCHECK(evaluated == 7, "evaluated is {}", evaluated),
               "KEEL_DCHECK\\(evaluated == 7\\) failed: evaluated is 1");
  stat s;
  EXPECT_DEATH(s.decrease(1), "stat goes below zero");
#endif
}

TEST(HostileSizes, PageBookkeepingCostsNothingPerPage) {
  // A petabyte range mapped and unmapped in pieces: the ledger keeps runs, not pages.
  sim_backend device;
  const std::size_t range = std::size_t{1} << 50;
  const auto base = device.reserve_range(range);
  ASSERT_TRUE(base);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(device.map_pages(*base, 0, range / 2));
  ASSERT_TRUE(device.map_pages(*base, range / 2, range / 4));
  EXPECT_THROW(device.map_pages(*base, range / 4, 2 * k_mib), invalid_argument);  // mapped twice
  EXPECT_THROW(device.map_pages(*base, range, 2 * k_mib), invalid_argument);      // outside
  device.unmap_pages(*base, range / 8, range / 8);
  EXPECT_EQ(device.mapped_bytes(), range / 2 + range / 4 - range / 8);
  ASSERT_TRUE(device.map_pages(*base, range / 8, range / 16));
  device.release_range(*base, range);
  EXPECT_EQ(device.mapped_bytes(), 0u);
  EXPECT_EQ(device.used_bytes(), 0u);
  EXPECT_LT(seconds_since(t0), 1.0);
}

snapshot one_segment(std::uint64_t address, std::uint64_t size) {
  snapshot s;
  snapshot_segment seg;
  seg.address = address;
  seg.total_size = size;
  seg.blocks = {{address, size, 0, block_state::inactive, {}}};
  s.segments = {seg};
  s.device_traces.resize(1);
  return s;
}

TEST(HostileSizes, WrappedSizesInAPickleAreParseErrors) {
  // A replayed 2^64-1 request was "served" by a 2 MiB segment.
  snapshot request = one_segment(1ull << 40, 2 * k_mib);
  request.device_traces[0] = {{trace_action::alloc, 1ull << 40, k_max_u64, 0, 1, 0, {}}};
  std::string error = parse_failure(to_pickle(request));
  EXPECT_TRUE(contains(error,
                       "device_traces[0][0]: 'size' 18446744073709551615 is larger than "
                       "any device"))
      << error;
  // The same snapshot built in memory is refused by the model, naming the place.
  try {
    build_trace_model(request, 0);
    FAIL();
  } catch (const invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "device_traces[0][0]")) << e.what();
  }
  // A segment, a block and a device_free above 2^62; a range past the end of memory.
  snapshot big = one_segment(1ull << 40, k_max_device_bytes + 512);
  EXPECT_TRUE(contains(parse_failure(to_pickle(big)), "segments[0]: 'total_size'"));
  snapshot oom = one_segment(1ull << 40, 2 * k_mib);
  oom.device_traces[0] = {{trace_action::oom, 0, 512, 0, 1, k_max_u64 - 1, {}}};
  EXPECT_TRUE(contains(parse_failure(to_pickle(oom)), "device_traces[0][0]: 'device_free'"));
  snapshot top = one_segment(k_max_u64 - k_mib, 2 * k_mib);
  EXPECT_TRUE(contains(parse_failure(to_pickle(top)), "past the end of the address space"));
  snapshot entry = one_segment(1ull << 40, 2 * k_mib);
  entry.device_traces[0] = {{trace_action::segment_map, k_max_u64 - k_mib, 2 * k_mib, 0, 1, 0, {}}};
  EXPECT_TRUE(contains(parse_failure(to_pickle(entry)), "device_traces[0][0]: segment_map"));
}

TEST(HostileSizes, ThreeHugeAllocationsReplayWithoutOverflow) {
  // The 3-entry pickle that overflowed stat::increase: three allocations of the largest size
  // a snapshot may hold. The first is served, the others are out of memory.
  snapshot s;
  s.device_traces.resize(1);
  for (int i = 0; i < 3; ++i) {
    s.device_traces[0].push_back({trace_action::alloc,
                                  (1ull << 40) + (static_cast<std::uint64_t>(i) << 20),
                                  k_max_device_bytes,
                                  0,
                                  i,
                                  0,
                                  {}});
  }
  const snapshot read = parse(to_pickle(s));
  const trace_model m = build_trace_model(read, 0);
  replay_options o;
  o.config = m.recorded_config;
  o.continue_after_oom = true;
  const replay_result r = replay(m, o);
  EXPECT_EQ(r.peak_reserved, k_max_device_bytes);
  EXPECT_EQ(r.peak_allocated, k_max_device_bytes);
  ASSERT_EQ(r.ooms.size(), 2u);
  EXPECT_FALSE(r.ooms[0].recorded);
  EXPECT_EQ(r.requested_at_peak + r.internal_at_peak + r.external_at_peak, r.peak_reserved);
  // The keel policy too (its ranges are 1.125 x the device, at most 1.125 TiB here: none fits).
  o.config = allocator_config::parse("policy:keel");
  const replay_result k = replay(m, o);
  EXPECT_LE(k.peak_reserved, k_max_device_bytes);
  EXPECT_EQ(k.ooms.size(), 3u);
}

TEST(HostileSizes, AFreeOfAnotherSizeDoesNotUnderflowTheReplay) {
  // A recorded free_completed names a larger size than its alloc: the replay subtracts what the
  // alloc asked for, not what the free says.
  snapshot s;
  s.device_traces.resize(1);
  s.device_traces[0] = {{trace_action::alloc, 1ull << 40, 1000, 0, 1, 0, {}},
                        {trace_action::free_requested, 1ull << 40, 5000, 0, 2, 0, {}},
                        {trace_action::free_completed, 1ull << 40, 5000, 0, 3, 0, {}},
                        {trace_action::alloc, 1ull << 40, 800, 0, 4, 0, {}}};
  const trace_model m = build_trace_model(parse(to_pickle(s)), 0);
  replay_options o;
  o.config = m.recorded_config;
  const replay_result r = replay(m, o);
  EXPECT_EQ(r.peak_allocated, 1000u);
  EXPECT_TRUE(r.completed());
}

// --- 3. garbage accepted after parsing ---

snapshot tiled() {
  snapshot s = one_segment(1ull << 40, 4 * k_mib);
  auto& seg = s.segments[0];
  seg.blocks = {{seg.address, 1 * k_mib, 1000, block_state::active_allocated, {}},
                {seg.address + k_mib, 3 * k_mib, 0, block_state::inactive, {}}};
  seg.allocated_size = seg.active_size = k_mib;
  seg.requested_size = 1000;
  return s;
}

TEST(HostileSnapshot, BlocksMustTileTheirSegment) {
  EXPECT_EQ(parse_failure(to_pickle(tiled())), "");
  struct bad {
    const char* what;
    void (*edit)(snapshot_segment&);
    const char* error;
  };
  const bad cases[] = {
      {"a gap", [](snapshot_segment& s) { s.blocks[1].address += 512; },
       "segments[0].blocks[1]: the block at 0x10000100200 does not start where the block before "
       "ends (0x10000100000)"},
      {"an overlap", [](snapshot_segment& s) { s.blocks[1].address -= 512; },
       "segments[0].blocks[1]: the block at 0x100000ffe00 does not start where the block before "
       "ends"},
      {"a first block elsewhere", [](snapshot_segment& s) { s.blocks[0].address += 512; },
       "segments[0].blocks[0]: the block at 0x10000000200 does not start where its segment "
       "starts"},
      {"past the end", [](snapshot_segment& s) { s.blocks[1].size += 512; },
       "segments[0].blocks[1]: the block at 0x10000100000 (3146240 bytes) ends 512 bytes past the "
       "end of its segment"},
      {"short", [](snapshot_segment& s) { s.blocks[1].size -= 512; },
       "segments[0]: its blocks cover 4193792 of the segment's 4194304 bytes"},
      {"no blocks", [](snapshot_segment& s) { s.blocks.clear(); },
       "segments[0]: its blocks cover 0 of the segment's 4194304 bytes"},
      {"an empty block",
       [](snapshot_segment& s) {
         s.blocks.insert(s.blocks.begin() + 1,
                         snapshot_block{s.address + k_mib, 0, 0, block_state::inactive, {}});
       },
       "segments[0].blocks[1]: a block of 0 bytes"},
      {"an empty segment",
       [](snapshot_segment& s) {
         s.total_size = 0;
         s.blocks.clear();
       },
       "segments[0]: a segment of 0 bytes"},
      {"a live block smaller than its request",
       [](snapshot_segment& s) { s.blocks[0].requested_size = 2 * k_mib; },
       "segments[0].blocks[0]: a block in use (active_allocated) of 1048576 bytes cannot hold a "
       "request of 2097152 bytes"},
  };
  for (const bad& b : cases) {
    SCOPED_TRACE(b.what);
    snapshot s = tiled();
    b.edit(s.segments[0]);
    const std::string error = parse_failure(to_pickle(s));
    EXPECT_TRUE(contains(error, b.error)) << error;
    EXPECT_TRUE(contains(error, "hostile: byte ")) << error;
  }
  // A free block may keep a stale, larger request (PyTorch merges without clearing it).
  snapshot stale = tiled();
  stale.segments[0].blocks[1].requested_size = 4 * k_mib;
  EXPECT_EQ(parse_failure(to_pickle(stale)), "");
  // Segments of one device do not overlap; on two devices they may share addresses.
  snapshot two = tiled();
  two.segments.push_back(two.segments[0]);
  EXPECT_TRUE(contains(parse_failure(to_pickle(two)),
                       "segments[1]: the segment at 0x10000000000 overlaps segments[0]"));
  two.segments[1].device = 1;
  EXPECT_EQ(parse_failure(to_pickle(two)), "");
}

TEST(HostileSnapshot, NonTilingBlocksNoLongerPrintWrappedRounding) {
  // The reproducer: blocks that overlap made a start block smaller than its request, and the
  // analysis printed "17179869184.00 GiB rounding inside blocks". From a file it is a parse
  // error (above); a snapshot built in memory still gets a correct answer.
  snapshot s = one_segment(1ull << 40, 20 * k_mib);
  auto& seg = s.segments[0];
  seg.blocks = {
      {seg.address, 8 * k_mib, 8 * k_mib, block_state::active_allocated, {}},
      {seg.address + 4 * k_mib, 16 * k_mib, 16 * k_mib, block_state::active_allocated, {}}};
  s.device_traces[0] = {{trace_action::alloc, seg.address + 10 * k_mib, 4096, 0, 1, 0, {}}};
  const trace_model m = build_trace_model(s, 0);
  EXPECT_FALSE(m.notes.empty());
  EXPECT_LE(m.start_requested, m.start_reserved);
  replay_options o;
  o.config = m.recorded_config;
  const replay_result r = replay(m, o);
  EXPECT_LE(r.internal_at_peak, r.peak_reserved);
  EXPECT_EQ(r.requested_at_peak + r.internal_at_peak + r.external_at_peak, r.peak_reserved);
  const std::string text = to_text(r, m, "in-memory");
  EXPECT_FALSE(contains(text, "17179869184")) << text;
  EXPECT_FALSE(contains(text, "16.00 EiB")) << text;
}

allocator_settings default_settings() {
  allocator_settings st;
  st.max_split_size = -1;
  st.roundup_power2_divisions = std::vector<std::int64_t>(16, 0);
  return st;
}

TEST(HostileSnapshot, RecordedSettingsFollowTheConfGrammar) {
  struct bad {
    const char* what;
    void (*edit)(allocator_settings&);
    const char* error;
  };
  const bad cases[] = {
      {"gc threshold 5", [](allocator_settings& s) { s.garbage_collection_threshold = 5.0; },
       "allocator_settings: 'garbage_collection_threshold' 5 is outside [0, 1)"},
      {"gc threshold -0.5", [](allocator_settings& s) { s.garbage_collection_threshold = -0.5; },
       "allocator_settings: 'garbage_collection_threshold' -0.5 is outside [0, 1)"},
      {"a bogus string", [](allocator_settings& s) { s.conf = "bogus:::"; },
       "allocator_settings: PYTORCH_CUDA_ALLOC_CONF: "},
      {"an unknown key", [](allocator_settings& s) { s.conf = "max_split_size_mb:64,warp:9"; },
       "allocator_settings: PYTORCH_CUDA_ALLOC_CONF: unknown key 'warp'"},
      {"keel's own key", [](allocator_settings& s) { s.conf = "policy:keel"; },
       "'policy' is keel's key, not PyTorch's"},
      {"a threshold --conf refuses",
       [](allocator_settings& s) { s.conf = "garbage_collection_threshold:5.0"; },
       "garbage_collect_threshold"},
      {"divisions of 3", [](allocator_settings& s) { s.roundup_power2_divisions[4] = 3; },
       "roundup_power2_divisions 3 is neither 0 nor a power of 2"},
      {"a negative split size", [](allocator_settings& s) { s.max_split_size = -7; },
       "'max_split_size' -7 is neither -1 (unlimited) nor a size from 20 MiB"},
      {"a split size --conf cannot say (found by the fuzzer: the allocator's own snapshot "
       "wrote it as max_split_size_mb:0)",
       [](allocator_settings& s) { s.max_split_size = 4; },
       "'max_split_size' 4 is neither -1 (unlimited) nor a size from 20 MiB"},
      {"a huge rounding size",
       [](allocator_settings& s) {
         s.max_non_split_rounding_size = static_cast<std::int64_t>(k_max_device_bytes) + 1;
       },
       "'max_non_split_rounding_size' 4611686018427387905 is not a size from 20 MiB"},
  };
  for (const bad& b : cases) {
    SCOPED_TRACE(b.what);
    snapshot s = tiled();
    allocator_settings st = default_settings();
    b.edit(st);
    s.settings = st;
    const std::string error = parse_failure(to_pickle(s));
    EXPECT_TRUE(contains(error, b.error)) << error;
    // What --conf says of the same string, the reader says too.
    if (!st.conf.empty() && st.conf != "policy:keel") {
      EXPECT_THROW(allocator_config::parse_pytorch(st.conf), invalid_argument);
    }
    // Built in memory, the model refuses it.
    EXPECT_THROW(build_trace_model(s, 0), invalid_argument);
  }
  // What PyTorch writes reads, and the model has nothing to say about it.
  snapshot ok = tiled();
  allocator_settings st = default_settings();
  st.conf = "expandable_segments:True,garbage_collection_threshold:0.6";
  st.expandable_segments = true;
  st.garbage_collection_threshold = 0.6;
  ok.settings = st;
  const snapshot read = parse(to_pickle(ok));
  const trace_model m = build_trace_model(read, 0);
  EXPECT_TRUE(m.notes.empty()) << m.notes.front().text;
  EXPECT_TRUE(m.recorded_config.expandable_segments);
  EXPECT_DOUBLE_EQ(m.recorded_config.garbage_collection_threshold, 0.6);
}

bool has_note(const trace_model& m, std::string_view part) {
  for (const model_note& n : m.notes) {
    if (contains(n.text, part)) return true;
  }
  return false;
}

TEST(HostileSnapshot, OddButUsableRecordingsBecomeNotes) {
  // The string and the values disagree (PyTorch records the last string it was given, while the
  // values are what the allocator ran with): the values win, with a note.
  snapshot s = tiled();
  allocator_settings st = default_settings();
  st.conf = "expandable_segments:True";
  s.settings = st;
  trace_model m = build_trace_model(parse(to_pickle(s)), 0);
  EXPECT_TRUE(has_note(m, "disagree on expandable_segments")) << m.notes.front().text;
  EXPECT_FALSE(m.recorded_config.expandable_segments);
  // A string only the other PyTorch grammar reads: max_split_size_mb:20 is refused by 2.0-2.9
  // (the keys keel writes imply that grammar) and read by 2.10+.
  st.conf = "max_split_size_mb:20";
  st.max_split_size = 20 * k_mib;
  s.settings = st;
  m = build_trace_model(parse(to_pickle(s)), 0);
  EXPECT_TRUE(has_note(m, "is read as accelerator_allocator_config reads it"))
      << m.notes.front().text;
  EXPECT_EQ(m.grammar, pytorch_grammar::accelerator_allocator_config);
  EXPECT_EQ(m.recorded_config.max_split_size, 20 * k_mib);
  // Summary sizes that disagree with the blocks, a small-pool segment that is not 2 MiB, two
  // free blocks side by side.
  snapshot odd = tiled();
  odd.segments[0].allocated_size = 77;
  odd.segments[0].is_large = false;
  odd.segments[0].blocks[1].size = k_mib;
  odd.segments[0].blocks.push_back(
      {odd.segments[0].address + 2 * k_mib, 2 * k_mib, 0, block_state::inactive, {}});
  m = build_trace_model(parse(to_pickle(odd)), 0);
  EXPECT_TRUE(has_note(m, "disagrees with its blocks"));
  EXPECT_TRUE(has_note(m, "not PyTorch's 2 MiB"));
  EXPECT_TRUE(has_note(m, "two free blocks side by side"));
  replay_options o;
  o.config = m.recorded_config;
  EXPECT_TRUE(replay(m, o).completed());
}

TEST(HostileSnapshot, ExpandableRunsOfPartPagesReplay) {
  // Found by the snapshot fuzzer: a large-pool expandable run of 2 GiB (not whole 20 MiB pages)
  // made the replay throw "import: expandable run ... is not a run of whole pages".
  snapshot s = one_segment(1ull << 44, 2ull << 30);
  auto& seg = s.segments[0];
  seg.is_expandable = true;
  seg.blocks = {{seg.address, 1ull << 30, (1ull << 30) - 1000, block_state::active_allocated, {}},
                {seg.address + (1ull << 30), 1ull << 30, 0, block_state::inactive, {}}};
  seg.allocated_size = seg.active_size = 1ull << 30;
  seg.requested_size = (1ull << 30) - 1000;
  allocator_settings st = default_settings();
  st.conf = "expandable_segments:True";
  st.expandable_segments = true;
  s.settings = st;
  s.device_traces[0] = {{trace_action::alloc, seg.address + (1ull << 30), 4096, 0, 1, 0, {}}};
  const trace_model m = build_trace_model(parse(to_pickle(s)), 0);
  EXPECT_TRUE(has_note(m, "not whole pages")) << (m.notes.empty() ? "" : m.notes.front().text);
  for (const char* conf : {"", "policy:keel", "expandable_segments:False"}) {
    SCOPED_TRACE(conf);
    for (const start_mode start : {start_mode::window, start_mode::fresh}) {
      replay_options o;
      o.config = allocator_config::parse(conf, "test", m.recorded_config);
      o.start = start;
      const replay_result r = replay(m, o);
      EXPECT_TRUE(r.completed());
      EXPECT_GE(r.peak_reserved, 1ull << 30);
    }
  }
}

TEST(HostileSnapshot, AllocatorSnapshotsPassTheReadersChecks) {
  // take_snapshot writes PyTorch's string (no keel-only key), blocks that tile: it reads back.
  sim_backend device;
  caching_allocator a(device, allocator_config::parse("policy:keel"));
  a.record_history(true);
  const std::uint64_t x = a.allocate(3 * k_mib);
  a.allocate(700);
  a.deallocate(x);
  const snapshot s = a.take_snapshot();
  ASSERT_TRUE(s.settings);
  EXPECT_FALSE(contains(s.settings->conf, "policy"));
  const snapshot read = parse(to_pickle(s));
  EXPECT_EQ(read, s);
  EXPECT_NO_THROW(build_trace_model(read, 0));
}

}  // namespace
}  // namespace keel::memory
