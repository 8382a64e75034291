// compare: totals, call sites, segments and pools between two snapshots, on small synthetic
// snapshots and on a real trace against a modified copy of itself; and `keel mem compare`
// end to end (exit codes, one-line errors, the JSON contract).
#include "keel/memory/compare.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "process.hpp"

namespace keel::memory {
namespace {

namespace fs = std::filesystem;

const fs::path k_traces = fs::path(KEEL_SHARED_DIR) / "traces" / "pytorch";
const std::string k_example = std::string(KEEL_SOURCE_DIR) + "/examples/memory/train-varlen.pickle";
const std::string k_data = std::string(KEEL_SOURCE_DIR) + "/tests/data/memory/";

const frame k_call{"/env/lib/python3.11/site-packages/torch/nn/modules/module.py", 1750,
                   "_call_impl"};
const frame_stack k_fwd_a{{"/p/model.py", 10, "forward"}, k_call};
const frame_stack k_fwd_b{{"/p/model.py", 20, "forward"}, k_call};
const frame_stack k_opt{
    {"/env/lib/python3.11/site-packages/torch/optim/adam.py", 111, "_init_group"},
    {"/p/train.py", 5, "main"}};

snapshot_block block(std::uint64_t address, std::uint64_t size, block_state state,
                     frame_stack frames = {}) {
  return {address, size, state == block_state::inactive ? 0 : size, state, std::move(frames)};
}

snapshot_segment segment(int device, std::uint64_t address, std::vector<snapshot_block> blocks,
                         std::uint64_t stream = 0,
                         std::pair<std::int64_t, std::int64_t> pool = {0, 0}) {
  snapshot_segment s;
  s.device = device;
  s.address = address;
  s.stream = stream;
  s.pool_id = pool;
  std::uint64_t next = address;
  for (snapshot_block& b : blocks) {
    b.address = next;
    next += b.size;
    s.total_size += b.size;
  }
  s.is_large = s.total_size > 2 * k_mib;
  s.blocks = std::move(blocks);
  return s;
}

constexpr auto k_live = block_state::active_allocated;
constexpr auto k_free = block_state::inactive;

// A: device 0 has a small segment (512 KiB of forward A) and a 20 MiB one (10 MiB of optimizer
// state, 4 MiB of forward A); device 1 one 20 MiB block without frames.
snapshot before() {
  snapshot s;
  s.segments = {
      segment(0, 0x100000,
              {block(0, 512 * k_kib, k_live, k_fwd_a), block(0, 1536 * k_kib, k_free)}),
      segment(0, 0x20000000,
              {block(0, 10 * k_mib, k_live, k_opt), block(0, 4 * k_mib, k_live, k_fwd_a),
               block(0, 6 * k_mib, k_free)}),
      segment(1, 0x40000000, {block(0, 20 * k_mib, k_live)}),
  };
  return s;
}

// B: the small segment's block is free, the large segment grew (expandable) by 20 MiB of
// forward B, a new segment on stream 7 holds 1 MiB more optimizer state (one block pending
// free), and device 1's segment is gone.
snapshot after() {
  snapshot s;
  s.segments = {
      segment(0, 0x100000, {block(0, 512 * k_kib, k_free), block(0, 1536 * k_kib, k_free)}),
      segment(0, 0x20000000,
              {block(0, 10 * k_mib, k_live, k_opt), block(0, 4 * k_mib, k_live, k_fwd_a),
               block(0, 6 * k_mib, k_free), block(0, 20 * k_mib, k_live, k_fwd_b)}),
      segment(
          0, 0x60000000,
          {block(0, 512 * k_kib, k_live, k_opt),
           block(0, 512 * k_kib, block_state::active_pending_free, k_opt), block(0, k_mib, k_free)},
          7, {1, 2}),
  };
  s.segments[1].is_expandable = true;
  return s;
}

TEST(CompareSnapshots, TotalsPerDevice) {
  const snapshot_diff d = compare_snapshots(before(), after(), {});
  ASSERT_EQ(d.devices.size(), 2u);
  EXPECT_EQ(d.devices[0].device, 0);
  EXPECT_EQ(d.devices[0].a,
            (device_totals{22 * k_mib, 14 * k_mib + 512 * k_kib, 14 * k_mib + 512 * k_kib,
                           14 * k_mib + 512 * k_kib, 2, 3}));
  EXPECT_EQ(d.devices[0].b.reserved, 44 * k_mib);
  EXPECT_EQ(d.devices[0].b.allocated, 34 * k_mib + 512 * k_kib);
  EXPECT_EQ(d.devices[0].b.live, 35 * k_mib);
  EXPECT_EQ(d.devices[0].b.segments, 3u);
  EXPECT_EQ(d.devices[0].b.blocks, 5u);
  EXPECT_EQ(d.devices[1].device, 1);
  EXPECT_EQ(d.devices[1].a.reserved, 20 * k_mib);
  EXPECT_EQ(d.devices[1].b, device_totals{});
  EXPECT_EQ(totals_of(before(), 3), device_totals{});
}

TEST(CompareSnapshots, CallSitesSortedByChange) {
  const snapshot_diff d = compare_snapshots(before(), after(), {});
  ASSERT_EQ(d.sites.size(), 4u);
  EXPECT_EQ(d.sites_unchanged, 0u);
  // |+20 MiB| ties |-20 MiB|: then by site.
  EXPECT_EQ(d.sites[0].site, "no frames recorded");
  EXPECT_EQ(d.sites[0].kind, change_kind::removed);
  EXPECT_EQ(d.sites[0].delta(), -static_cast<std::int64_t>(20 * k_mib));
  EXPECT_EQ(d.sites[1].site, "p/model.py:20:forward");
  EXPECT_EQ(d.sites[1].kind, change_kind::added);
  EXPECT_EQ(d.sites[1].category, memory_category::activation);
  EXPECT_EQ(d.sites[1].count_b, 1u);
  EXPECT_EQ(d.sites[2].site, "p/train.py:5:main");
  EXPECT_EQ(d.sites[2].kind, change_kind::grown);
  EXPECT_EQ(d.sites[2].category, memory_category::optimizer_state);
  EXPECT_EQ(d.sites[2].delta(), static_cast<std::int64_t>(k_mib));
  EXPECT_EQ(d.sites[2].count_a, 1u);
  EXPECT_EQ(d.sites[2].count_b, 3u);
  EXPECT_EQ(d.sites[3].site, "p/model.py:10:forward");
  EXPECT_EQ(d.sites[3].kind, change_kind::shrunk);
  EXPECT_EQ(d.sites[3].delta(), -static_cast<std::int64_t>(512 * k_kib));
  EXPECT_FALSE(d.sites[3].frames.empty());
  const auto cat = [](memory_category c) { return static_cast<std::size_t>(c); };
  EXPECT_EQ(d.category_a[cat(memory_category::activation)], 4 * k_mib + 512 * k_kib);
  EXPECT_EQ(d.category_b[cat(memory_category::activation)], 24 * k_mib);
  EXPECT_EQ(d.category_a[cat(memory_category::unknown)], 20 * k_mib);
  EXPECT_EQ(d.category_b[cat(memory_category::unknown)], 0u);
}

TEST(CompareSnapshots, SegmentsAndPools) {
  const snapshot_diff d = compare_snapshots(before(), after(), {});
  EXPECT_EQ(d.segments_same, 1u);
  ASSERT_EQ(d.segments.size(), 3u);
  // |20 MiB| twice: by device and address.
  EXPECT_EQ(d.segments[0].kind, segment_change_kind::resized);
  EXPECT_EQ(d.segments[0].address, 0x20000000u);
  EXPECT_TRUE(d.segments[0].is_expandable);
  EXPECT_EQ(d.segments[0].size_a, 20 * k_mib);
  EXPECT_EQ(d.segments[0].size_b, 40 * k_mib);
  EXPECT_EQ(d.segments[0].live_a, 14 * k_mib);
  EXPECT_EQ(d.segments[0].live_b, 34 * k_mib);
  EXPECT_EQ(d.segments[1].kind, segment_change_kind::only_a);
  EXPECT_EQ(d.segments[1].device, 1);
  EXPECT_EQ(d.segments[1].delta(), -static_cast<std::int64_t>(20 * k_mib));
  EXPECT_EQ(d.segments[2].kind, segment_change_kind::only_b);
  EXPECT_EQ(d.segments[2].stream, 7u);
  EXPECT_EQ(d.segments[2].pool_id, (std::pair<std::int64_t, std::int64_t>{1, 2}));
  EXPECT_FALSE(d.segments[2].is_large);
  EXPECT_EQ(d.segments[2].live_b, k_mib);

  ASSERT_EQ(d.pools.size(), 3u);
  EXPECT_EQ(d.pools[0].device, 0);
  EXPECT_EQ(d.pools[0].stream, 0u);
  EXPECT_EQ(d.pools[0].reserved_a, 22 * k_mib);
  EXPECT_EQ(d.pools[0].reserved_b, 42 * k_mib);
  EXPECT_EQ(d.pools[1].stream, 7u);
  EXPECT_EQ(d.pools[1].reserved_a, 0u);
  EXPECT_EQ(d.pools[1].reserved_b, 2 * k_mib);
  EXPECT_EQ(d.pools[1].segments_b, 1u);
  EXPECT_EQ(d.pools[2].device, 1);
  EXPECT_EQ(d.pools[2].reserved_b, 0u);
}

TEST(CompareSnapshots, OneDeviceAndBadDevices) {
  compare_options o;
  o.device = 0;
  const snapshot_diff d = compare_snapshots(before(), after(), o);
  ASSERT_EQ(d.devices.size(), 1u);
  EXPECT_EQ(d.sites.size(), 3u);  // device 1's frameless block is not compared
  EXPECT_EQ(d.segments.size(), 2u);
  EXPECT_EQ(d.pools.size(), 2u);
  o.device = 1;
  EXPECT_EQ(compare_snapshots(before(), after(), o).segments.size(), 1u);
  o.device = 5;
  EXPECT_THROW(compare_snapshots(before(), after(), o), invalid_argument);
  try {
    compare_snapshots(before(), after(), o);
  } catch (const invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("device 5"), std::string::npos) << e.what();
  }
}

TEST(CompareSnapshots, ASnapshotAgainstItselfHasNoChanges) {
  const snapshot_diff d = compare_snapshots(after(), after(), {});
  EXPECT_TRUE(d.sites.empty());
  EXPECT_EQ(d.sites_unchanged, 3u);
  EXPECT_TRUE(d.segments.empty());
  EXPECT_EQ(d.segments_same, 3u);
  for (const device_change& c : d.devices) EXPECT_EQ(c.a, c.b);
  const snapshot_diff empty = compare_snapshots(snapshot{}, snapshot{}, {});
  EXPECT_TRUE(empty.devices.empty());
  std::ostringstream text;
  write_compare_text(text, empty);
  EXPECT_NE(text.str().find("call sites: 0 changed"), std::string::npos);
}

TEST(CompareSnapshots, JsonDocument) {
  compare_options o;
  o.name_a = "a.pickle";
  o.name_b = "b.pickle";
  const snapshot_diff d = compare_snapshots(before(), after(), o);
  const nlohmann::json j = to_json(d);
  EXPECT_EQ(j["a"], "a.pickle");
  EXPECT_EQ(j["b"], "b.pickle");
  EXPECT_TRUE(j["device"].is_null());
  ASSERT_EQ(j["devices"].size(), 2u);
  EXPECT_EQ(j["devices"][0]["a"]["reserved"], 22 * k_mib);
  EXPECT_EQ(j["devices"][0]["delta"]["reserved"], 22 * k_mib);
  EXPECT_EQ(j["devices"][1]["delta"]["live"], -static_cast<std::int64_t>(20 * k_mib));
  EXPECT_EQ(j["sites"]["changed"], 4);
  EXPECT_EQ(j["sites"]["unchanged"], 0);
  ASSERT_EQ(j["sites"]["rows"].size(), 4u);
  const nlohmann::json& added = j["sites"]["rows"][1];
  for (const char* key : {"site", "module", "category", "change", "bytes_a", "bytes_b", "delta",
                          "count_a", "count_b"}) {
    EXPECT_TRUE(added.contains(key)) << key;
  }
  EXPECT_EQ(added["change"], "added");
  EXPECT_EQ(added["category"], "activation");
  EXPECT_EQ(added["module"], "p/model.py");
  EXPECT_EQ(j["segments"]["only_a"], 1);
  EXPECT_EQ(j["segments"]["only_b"], 1);
  EXPECT_EQ(j["segments"]["resized"], 1);
  EXPECT_EQ(j["segments"]["same"], 1);
  EXPECT_EQ(j["segments"]["bytes_only_a"], 20 * k_mib);
  EXPECT_EQ(j["segments"]["rows"][0]["segment_type"], "large");
  EXPECT_EQ(j["segments"]["rows"][2]["pool_id"], nlohmann::json::array({1, 2}));
  ASSERT_EQ(j["pools"].size(), 3u);
  EXPECT_EQ(j["pools"][1]["delta"], 2 * k_mib);
  bool unknown = false;
  for (const auto& c : j["categories"])
    unknown = unknown || (c["category"] == "unknown" && c["b"] == 0);
  EXPECT_TRUE(unknown);

  // top cuts the rows, not the counts.
  const nlohmann::json cut = to_json(d, 1);
  EXPECT_EQ(cut["sites"]["rows"].size(), 1u);
  EXPECT_EQ(cut["sites"]["changed"], 4);
  EXPECT_EQ(cut["segments"]["rows"].size(), 1u);
  EXPECT_EQ(cut["segments"]["only_b"], 1);
}

TEST(CompareSnapshots, TextNamesTheChanges) {
  compare_options o;
  o.name_a = "a.pickle";
  o.name_b = "b.pickle";
  std::ostringstream out;
  write_compare_text(out, compare_snapshots(before(), after(), o), 2);
  const std::string text = out.str();
  EXPECT_NE(text.find("A: a.pickle"), std::string::npos) << text;
  EXPECT_NE(text.find("device 0  reserved    22.00 MiB -> 44.00 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("+22.00 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("call sites: 4 changed, 0 unchanged (largest 2 shown)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("added    activation       p/model.py:20:forward"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("p/model.py:10:forward"), std::string::npos) << text;  // beyond top 2
  EXPECT_NE(
      text.find("segments: 1 only in A (20.00 MiB), 1 only in B (2.00 MiB), 1 resized, 1 the same"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("resized  device 0 0x20000000"), std::string::npos) << text;
  EXPECT_NE(text.find("device 0 stream 7 pool (1,2)"), std::string::npos) << text;
  EXPECT_NE(text.find("(1 more)"), std::string::npos) << text;
}

// ---- a real trace against a modified copy of itself ----

TEST(CompareSnapshots, RealTraceAgainstAModifiedCopy) {
  if (!fs::exists(k_traces)) GTEST_SKIP() << "shared traces not found at " << k_traces;
  const snapshot a = read_snapshot((k_traces / "cs336a2kk-ctx128-fullstep.pickle").string());
  snapshot b = a;
  // Remove the last segment, add a 40 MiB segment holding 32 MiB more of the optimizer's
  // first moment, and free one gradient block.
  const snapshot_segment removed = b.segments.back();
  b.segments.pop_back();
  const std::string moment = "cs336_basics/optimizers.py:82:step";
  frame_stack moment_frames;
  std::uint64_t top_address = 0;
  for (const snapshot_segment& seg : a.segments) {
    top_address = std::max(top_address, seg.address + seg.total_size);
    for (const snapshot_block& blk : seg.blocks) {
      if (moment_frames.empty() && blk.state != block_state::inactive &&
          attribute(blk.frames).site == moment) {
        moment_frames = blk.frames;
      }
    }
  }
  ASSERT_FALSE(moment_frames.empty());
  snapshot_segment added =
      segment(0, top_address + k_gib,
              {block(0, 32 * k_mib, k_live, moment_frames), block(0, 8 * k_mib, k_free)});
  b.segments.push_back(added);
  const std::string grad = "??:0:torch::autograd::generated::BmmBackward0::apply";
  std::uint64_t freed = 0;
  for (snapshot_segment& seg : b.segments) {
    for (snapshot_block& blk : seg.blocks) {
      if (freed == 0 && blk.state == block_state::active_allocated &&
          attribute(blk.frames).site == grad) {
        blk.state = block_state::inactive;
        freed = blk.size;
      }
    }
  }
  ASSERT_GT(freed, 0u);

  // What the removed segment held, by site.
  std::map<std::string, std::int64_t> removed_by_site;
  for (const snapshot_block& blk : removed.blocks) {
    if (blk.state != block_state::inactive)
      removed_by_site[attribute(blk.frames).site] -= static_cast<std::int64_t>(blk.size);
  }
  removed_by_site[moment] += static_cast<std::int64_t>(32 * k_mib);
  removed_by_site[grad] -= static_cast<std::int64_t>(freed);

  compare_options o;
  o.device = 0;
  const snapshot_diff d = compare_snapshots(a, b, o);
  ASSERT_EQ(d.devices.size(), 1u);
  EXPECT_EQ(d.devices[0].a.reserved, 61'111'009'280u);
  EXPECT_EQ(static_cast<std::int64_t>(d.devices[0].b.reserved - d.devices[0].a.reserved),
            static_cast<std::int64_t>(40 * k_mib) - static_cast<std::int64_t>(removed.total_size));
  EXPECT_EQ(d.devices[0].b.segments, d.devices[0].a.segments);
  EXPECT_EQ(d.segments_same, a.segments.size() - 1);
  ASSERT_EQ(d.segments.size(), 2u);
  for (const segment_change& s : d.segments) {
    if (s.kind == segment_change_kind::only_a) {
      EXPECT_EQ(s.address, removed.address);
      EXPECT_EQ(s.size_a, removed.total_size);
    } else {
      EXPECT_EQ(s.kind, segment_change_kind::only_b);
      EXPECT_EQ(s.address, added.address);
      EXPECT_EQ(s.live_b, 32 * k_mib);
    }
  }
  std::size_t expected_rows = 0;
  for (const auto& [site, delta] : removed_by_site) expected_rows += delta != 0;
  std::size_t checked = 0;
  for (const site_change& s : d.sites) {
    const auto found = removed_by_site.find(s.site);
    ASSERT_NE(found, removed_by_site.end()) << s.site;
    if (found->second == 0) continue;
    EXPECT_EQ(s.delta(), found->second) << s.site;
    ++checked;
  }
  EXPECT_EQ(checked, expected_rows);

  std::ostringstream text;
  write_compare_text(text, d);
  EXPECT_LE(test::count_lines(text.str()), 40) << text.str();
  EXPECT_NE(text.str().find(moment), std::string::npos) << text.str();
}

}  // namespace
}  // namespace keel::memory

// ---- `keel mem compare` ----

namespace keel::test {
namespace {

using memory::k_data;
using memory::k_example;

void expect_bad_input(const std::vector<std::string>& args, const std::string& needle) {
  const process_result r = run_keel(args);
  EXPECT_EQ(r.exit_code, 2) << testing::PrintToString(args) << "\n" << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

void write_pickle(const memory::snapshot& s, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  memory::write_snapshot_pickle(s, out);
}

TEST(MemCompareCli, BadInputIsOneLineAndExitTwo) {
  expect_bad_input({"mem", "compare", "/no/such/a", k_example}, "/no/such/a: no such file");
  expect_bad_input({"mem", "compare", k_example, "/no/such/b"}, "/no/such/b: no such file");
  expect_bad_input({"mem", "compare", k_example, KEEL_SOURCE_DIR}, "is a directory");
  expect_bad_input({"mem", "compare", k_example, k_data + "evil_global_p2.pickle"}, "GLOBAL");
  expect_bad_input({"mem", "compare", k_example, k_example, "--device", "7"}, "device 7 has no");
  expect_bad_input({"mem", "compare", k_example, k_example, "--top", "many"}, "--top");
  expect_bad_input({"mem", "compare", k_example, k_example, "--top", "-3"}, "--top");
  expect_bad_input({"mem", "compare", k_example}, "b");
}

TEST(MemCompareCli, JsonAndText) {
  const std::string dir = testing::TempDir();
  const std::string a = dir + "keel-compare-a.pickle";
  const std::string b = dir + "keel-compare-b.pickle";
  write_pickle(memory::before(), a);
  write_pickle(memory::after(), b);

  const process_result j = run_keel({"mem", "compare", a, b, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_TRUE(j.err.empty()) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  for (const char* key :
       {"a", "b", "device", "devices", "categories", "sites", "segments", "pools"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  EXPECT_EQ(doc["a"], a);
  EXPECT_EQ(doc["sites"]["changed"], 4);
  EXPECT_EQ(doc["sites"]["rows"][1]["site"], "p/model.py:20:forward");
  EXPECT_EQ(doc["segments"]["resized"], 1);

  const process_result one =
      run_keel({"mem", "compare", a, b, "--json", "--device", "1", "--top", "1"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto dev1 = nlohmann::json::parse(one.out);
  EXPECT_EQ(dev1["device"], 1);
  EXPECT_EQ(dev1["devices"].size(), 1u);
  EXPECT_EQ(dev1["sites"]["rows"].size(), 1u);

  const process_result t = run_keel({"mem", "compare", a, b});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("call sites: 4 changed"), std::string::npos) << t.out;
  EXPECT_LE(count_lines(t.out), 40) << t.out;

  const process_result same = run_keel({"mem", "compare", k_example, k_example});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("call sites: 0 changed"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("0 only in A"), std::string::npos) << same.out;
}

}  // namespace
}  // namespace keel::test
