// The HTML report: one self-contained file with the sections memory_viz users look for, the
// analysis document read tolerantly, hostile names escaped in HTML and in the embedded data,
// the embedded data faithful to the snapshot, state-only and multi-device snapshots. The page
// in a real browser is tested by report_html_browser_test.cpp.
#include "keel/memory/report_html.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "keel/core/error.hpp"
#include "keel/memory/synth.hpp"

namespace keel::memory {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path k_traces = fs::path(KEEL_SHARED_DIR) / "traces" / "pytorch";
const fs::path k_data = fs::path(KEEL_SOURCE_DIR) / "tests" / "data" / "memory";

constexpr const char* k_evil_name = "</script><script>alert(1)</script>";
constexpr const char* k_evil_file = "<img src=x onerror=alert(1)>.py";

json fixture() {
  std::ifstream in(k_data / "report_analysis_codeloc.json");
  return json::parse(in);
}

std::string page(const snapshot& s, const json& analysis = nullptr, const report_options& o = {}) {
  std::ostringstream out;
  write_html_report(out, s, analysis, o);
  return out.str();
}

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
    ++n;
  return n;
}

// The JSON document the page embeds.
json embedded(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"keel-report-data\">";
  const auto begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  const auto end = html.find("</script>", begin);
  return json::parse(html.substr(begin + open.size(), end - begin - open.size()));
}

trace_entry entry(trace_action a, std::uint64_t addr, std::uint64_t size, std::int64_t t,
                  frame_stack frames = {}) {
  trace_entry e;
  e.action = a;
  e.addr = addr;
  e.size = size;
  e.time_us = t;
  e.frames = std::move(frames);
  return e;
}

// Three devices: 0 and 1 with traces (1 with an OOM, hostile frame names on 0), 2 with
// segments only.
snapshot three_devices() {
  const frame_stack evil{{k_evil_file, 7, k_evil_name}, {"/home/user/train.py", 40, "main"}};
  const frame_stack plain{{"/home/user/model.py", 12, "forward"},
                          {"/home/user/train.py", 40, "main"}};
  snapshot s;
  constexpr std::uint64_t base = 0x7f0000000000;
  snapshot_segment seg0;
  seg0.device = 0;
  seg0.address = base;
  seg0.total_size = 20u << 20;
  seg0.blocks = {{base, 4u << 20, 4000000, block_state::active_allocated, evil},
                 {base + (4u << 20), 16u << 20, 0, block_state::inactive, {}}};
  snapshot_segment seg1;
  seg1.device = 1;
  seg1.address = base + (1ull << 30);
  seg1.total_size = 2u << 20;
  seg1.is_expandable = true;
  seg1.blocks = {{seg1.address, 2u << 20, 2u << 20, block_state::active_allocated, plain}};
  snapshot_segment seg2;
  seg2.device = 2;
  seg2.address = base + (2ull << 30);
  seg2.total_size = 2u << 20;
  seg2.is_large = false;
  seg2.blocks = {{seg2.address, 512, 500, block_state::active_pending_free, plain},
                 {seg2.address + 512, (2u << 20) - 512, 0, block_state::inactive, {}}};
  s.segments = {seg0, seg1, seg2};
  s.device_traces.resize(3);
  s.device_traces[0] = {
      entry(trace_action::segment_alloc, base, 20u << 20, 1000, plain),
      entry(trace_action::alloc, base, 4000000, 1010, evil),
      entry(trace_action::alloc, base + (4u << 20), 1u << 20, 1020, plain),
      entry(trace_action::free_requested, base + (4u << 20), 1u << 20, 1030, plain),
      entry(trace_action::free_completed, base + (4u << 20), 1u << 20, 1031, plain)};
  trace_entry oom = entry(trace_action::oom, 0, 5u << 30, 2005);
  oom.device_free = 1u << 20;
  s.device_traces[1] = {entry(trace_action::segment_map, seg1.address, 2u << 20, 2000, plain),
                        entry(trace_action::alloc, seg1.address, 2u << 20, 2001, plain), oom};
  allocator_settings settings;
  settings.conf = "expandable_segments:True";
  settings.expandable_segments = true;
  s.settings = settings;
  return s;
}

TEST(ReportHtml, IsOneSelfContainedFile) {
  const std::string html = page(three_devices(), fixture());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>\n"), std::string::npos);
  EXPECT_EQ(count(html, "<html"), 1u);
  // The page's own style and script, inline; nothing fetched.
  EXPECT_EQ(count(html, "<style>"), 1u);
  EXPECT_EQ(count(html, "<script"), 2u);  // the data and the script
  EXPECT_EQ(count(html, "</script>"), 2u);
  for (const char* fetch : {"<script src", "<link", "@import", "url(", "src=\"http", "href=\"http",
                            "fetch(", "XMLHttpRequest"}) {
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  }
  EXPECT_NE(html.find("function buildModel"), std::string::npos)
      << "the script is the readable source";
}

TEST(ReportHtml, HasTheSections) {
  const std::string html = page(three_devices(), fixture());
  for (const char* id : {"report-title",
                         "device-tabs",
                         "tab-device-0",
                         "tab-device-1",
                         "tab-device-2",
                         "device-0-summary",
                         "device-0-fidelity",
                         "device-0-recommendation",
                         "device-0-timeline",
                         "device-0-candidates",
                         "device-0-modes",
                         "device-0-mode-0-candidates",
                         "device-0-mode-1-candidates",
                         "device-0-state",
                         "device-0-callsites",
                         "device-1-oom",
                         "device-1-oom-sites",
                         "device-2-not-comparable",
                         "device-2-state-only",
                         "device-2-state",
                         "keel-report-data"}) {
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  // The charts the script draws into.
  EXPECT_EQ(count(html, "data-chart=\"active\""), 2u);  // devices 0 and 1 have traces
  EXPECT_EQ(count(html, "data-chart=\"lines\""), 2u);
  EXPECT_EQ(count(html, "data-chart=\"segments\""), 3u);
  // Mode labels, candidates, savings, the fidelity line.
  EXPECT_NE(html.find("this window (recording began with nothing reserved)"), std::string::npos);
  EXPECT_NE(html.find("a fresh process (nothing cached at the start)"), std::string::npos);
  EXPECT_NE(html.find("expandable segments, GC at 60% of a 0.95 fraction"), std::string::npos);
  EXPECT_NE(html.find("+50.00 MiB"), std::string::npos);         // saving of candidate 2
  EXPECT_NE(html.find("&minus;280.00 MiB"), std::string::npos);  // PyTorch defaults cost more
  EXPECT_NE(html.find("reproduces all 175 segment events"), std::string::npos);
  EXPECT_NE(html.find("memory fraction 0.95"), std::string::npos);
  // The recipe: copyable steps and the costs.
  EXPECT_NE(html.find("<code>export "
                      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,garbage_collection_"
                      "threshold:0.6</code>"),
            std::string::npos);
  EXPECT_NE(html.find("torch.cuda.set_per_process_memory_fraction(0.95, device=0)"),
            std::string::npos);
  EXPECT_GE(count(html, "class=\"copy\""), 2u);
  EXPECT_NE(html.find("15 more cudaMalloc calls"), std::string::npos);
  // Not comparable: why, and what to record instead.
  EXPECT_NE(html.find("cannot be trusted"), std::string::npos);
  EXPECT_NE(html.find("_record_memory_history(max_entries=1000000)"), std::string::npos);
  // The explanation of the OOM.
  EXPECT_NE(html.find("data-oom-class=\"not_fragmentation\""), std::string::npos);
  EXPECT_NE(html.find("no allocator setting can serve this request"), std::string::npos);
  EXPECT_NE(html.find("data-entry=\"421\""), std::string::npos);
  EXPECT_NE(html.find("modeling_qwen3.py:373:forward"), std::string::npos);
  // The first tab is the device with most trace entries.
  EXPECT_NE(html.find("class=\"tab active\" id=\"tab-device-0\""), std::string::npos);
}

TEST(ReportHtml, EscapesHostileNames) {
  json analysis = fixture();
  json& d0 = analysis["devices"][0];
  d0["recommendation"]["steps"][0]["text"] = std::string("</code></pre>") + k_evil_name;
  d0["callsites_at_peak"][0]["site"] = k_evil_file;
  d0["callsites_at_peak"][0]["frames"][0][2] = k_evil_name;
  d0["modes"][0]["label"] = "<b onmouseover=alert(1)>window</b>";
  report_options o;
  o.trace_name = "<title>&\"evil\".pickle";
  const std::string html = page(three_devices(), analysis, o);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_EQ(html.find("<b onmouseover"), std::string::npos);
  EXPECT_EQ(html.find("<title>&\"evil"), std::string::npos);
  EXPECT_EQ(count(html, "</script>"), 2u) << "no name closes a script element";
  // In HTML, entity-escaped; in the embedded data, \u-escaped.
  EXPECT_NE(html.find("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;.py"), std::string::npos);
  EXPECT_NE(html.find("&lt;title&gt;&amp;&quot;evil&quot;.pickle"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e"),
            std::string::npos);
  // And the names read back exactly.
  const json data = embedded(html);
  const auto& strings = data["tables"]["strings"];
  EXPECT_NE(std::find(strings.begin(), strings.end(), k_evil_name), strings.end());
  EXPECT_NE(std::find(strings.begin(), strings.end(), k_evil_file), strings.end());
  EXPECT_EQ(data["trace"], "<title>&\"evil\".pickle");
}

TEST(ReportHtml, ToleratesNamesThatAreNotUtf8) {
  snapshot s = three_devices();
  s.device_traces[0][1].frames = frame_stack{{"bad\xff\xfe.py", 1, "f\xc3"}};
  const std::string html = page(s);
  EXPECT_NO_THROW(embedded(html));
  // U+FFFD, the replacement character, in the data.
  EXPECT_NE(html.find("bad\xef\xbf\xbd\xef\xbf\xbd.py"), std::string::npos);
}

TEST(ReportHtml, EmbeddedDataRoundTrips) {
  const snapshot s = three_devices();
  const json data = embedded(page(s, fixture()));
  ASSERT_EQ(data["v"], 1);
  const std::uint64_t base = std::stoull(data["base"].get<std::string>());
  const json& t = data["tables"];
  const auto frames_of = [&](int id) {
    std::vector<frame> out;
    for (const json& k : t["stacks"][id]) {
      const int f = k.get<int>();
      out.push_back({t["strings"][t["frames"][3 * f].get<int>()].get<std::string>(),
                     t["frames"][3 * f + 1].get<std::int64_t>(),
                     t["strings"][t["frames"][3 * f + 2].get<int>()].get<std::string>()});
    }
    return out;
  };
  const auto address = [&](const json& rel) {
    return rel.get<std::int64_t>() < 0 ? 0 : base + rel.get<std::uint64_t>();
  };
  ASSERT_EQ(data["devices"].size(), 3u);
  for (int dev = 0; dev < 3; ++dev) {
    const json& d = data["devices"][dev];
    EXPECT_EQ(d["device"], dev);
    const auto& trace = s.device_traces[static_cast<std::size_t>(dev)];
    const json& tr = d["trace"];
    ASSERT_EQ(tr["act"].size(), trace.size());
    EXPECT_EQ(d["entries"], trace.size());
    for (std::size_t i = 0; i < trace.size(); ++i) {
      EXPECT_EQ(tr["act"][i], static_cast<int>(trace[i].action));
      EXPECT_EQ(address(tr["addr"][i]), trace[i].addr);
      EXPECT_EQ(tr["size"][i], trace[i].size);
      EXPECT_EQ(tr["time"][i].get<std::int64_t>() + tr["t0"].get<std::int64_t>(),
                *trace[i].time_us);
      EXPECT_EQ(frames_of(tr["stack"][i].get<int>()), trace[i].frames.vector());
    }
    // Segments and their blocks, in address order.
    const json& sg = d["segments"];
    std::size_t k = 0;
    for (const snapshot_segment& seg : s.segments) {
      if (seg.device != dev) continue;
      EXPECT_EQ(address(sg["addr"][k]), seg.address);
      EXPECT_EQ(sg["size"][k], seg.total_size);
      EXPECT_EQ(sg["flags"][k], (seg.is_large ? 1 : 0) | (seg.is_expandable ? 2 : 0));
      const std::size_t first = sg["first"][k], last = sg["first"][k + 1];
      ASSERT_EQ(last - first, seg.blocks.size());
      for (std::size_t b = 0; b < seg.blocks.size(); ++b) {
        EXPECT_EQ(address(sg["b_addr"][first + b]), seg.blocks[b].address);
        EXPECT_EQ(sg["b_size"][first + b], seg.blocks[b].size);
        EXPECT_EQ(sg["b_req"][first + b], seg.blocks[b].requested_size);
        EXPECT_EQ(frames_of(sg["b_stack"][first + b].get<int>()), seg.blocks[b].frames.vector());
      }
      ++k;
    }
    EXPECT_EQ(sg["addr"].size(), k);
  }
  EXPECT_EQ(data["devices"][1]["trace"]["oom_at"], json::array({2}));
  EXPECT_EQ(data["devices"][1]["trace"]["oom_free"], json::array({1u << 20}));
  // Stacks are stored once: the 5 stacks of device 0 are two distinct ones (+ the empty one).
  EXPECT_EQ(t["stacks"].size(), 3u);
  // The analysis the script needs: modes with columnar timelines.
  const json& m = data["devices"][0]["analysis"]["modes"][0];
  EXPECT_EQ(m["label"], "this window (recording began with nothing reserved)");
  EXPECT_EQ(m["best"], 3);
  ASSERT_EQ(m["cands"].size(), 4u);
  const json analysis = fixture();
  const json& tl = analysis["devices"][0]["modes"][0]["candidates"][1]["timeline"];
  const json& c = m["cands"][1];
  ASSERT_EQ(c["e"].size(), tl.size());
  for (std::size_t i = 0; i < tl.size(); ++i) {
    EXPECT_EQ(c["e"][i], tl[i][0]);
    EXPECT_EQ(c["a"][i], tl[i][1]);
    EXPECT_EQ(c["r"][i], tl[i][2]);
  }
  EXPECT_EQ(data["devices"][1]["analysis"]["oom_entry"], 421);
}

TEST(ReportHtml, TimelinesAreReducedToBucketMaxima) {
  // 10000 points where reserved is allocated plus a little; a sample of them could show
  // reserved below some allocated value or miss the peak, per-bucket maxima cannot.
  json tl = json::array();
  std::uint64_t max_a = 0, max_r = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t a = static_cast<std::uint64_t>((i * 7919) % 1000) << 20;
    const std::uint64_t r = a + (static_cast<std::uint64_t>(i % 3) << 20);
    max_a = std::max(max_a, a);
    max_r = std::max(max_r, r);
    tl.push_back({i, a, r});
  }
  json analysis = {
      {"schema", "keel.mem.analysis/1"},
      {"devices",
       {{{"device", 0},
         {"modes",
          {{{"mode", "window"}, {"candidates", {{{"label", "x"}, {"timeline", tl}}}}}}}}}}};
  report_options o;
  o.max_timeline_points = 100;
  const json c = embedded(
      page(three_devices(), analysis, o))["devices"][0]["analysis"]["modes"][0]["cands"][0];
  ASSERT_LE(c["e"].size(), 100u);
  ASSERT_GE(c["e"].size(), 90u);
  std::uint64_t got_a = 0, got_r = 0;
  for (std::size_t i = 0; i < c["e"].size(); ++i) {
    EXPECT_GE(c["r"][i].get<std::uint64_t>(), c["a"][i].get<std::uint64_t>()) << "bucket " << i;
    if (i > 0) EXPECT_GT(c["e"][i].get<int>(), c["e"][i - 1].get<int>());
    got_a = std::max(got_a, c["a"][i].get<std::uint64_t>());
    got_r = std::max(got_r, c["r"][i].get<std::uint64_t>());
  }
  EXPECT_EQ(got_a, max_a);
  EXPECT_EQ(got_r, max_r);
  // Short timelines are kept as they are.
  o.max_timeline_points = 20000;
  EXPECT_EQ(embedded(page(three_devices(), analysis,
                          o))["devices"][0]["analysis"]["modes"][0]["cands"][0]["e"]
                .size(),
            10000u);
}

TEST(ReportHtml, StateOnlySnapshotGetsASegmentMap) {
  snapshot s = three_devices();
  s.device_traces.clear();
  const std::string html = page(s);
  for (int dev = 0; dev < 3; ++dev) {
    const std::string p = "device-" + std::to_string(dev);
    EXPECT_NE(html.find("id=\"" + p + "\" data-device=\"" + std::to_string(dev) +
                        "\" data-entries=\"0\" data-kind=\"state\""),
              std::string::npos);
    EXPECT_NE(html.find("id=\"" + p + "-state-only\""), std::string::npos);
    EXPECT_NE(html.find("id=\"" + p + "-state\""), std::string::npos);
    EXPECT_NE(html.find("id=\"" + p + "-state-sites\""), std::string::npos);
    EXPECT_EQ(html.find("id=\"" + p + "-timeline\""), std::string::npos);
  }
  EXPECT_EQ(count(html, "data-chart=\"segments\""), 3u);
  EXPECT_NE(html.find("state only"), std::string::npos);
  // A plain segment list (torch.cuda.memory_snapshot()) too.
  s.segments_only = true;
  EXPECT_NO_THROW(page(s));
}

TEST(ReportHtml, TabsForEveryDeviceWithData) {
  snapshot s = three_devices();
  json analysis = fixture();
  analysis["devices"].push_back({{"device", 5}, {"entries", 0}});  // only in the analysis
  const std::string html = page(s, analysis);
  std::size_t last = 0;
  for (int dev : {0, 1, 2, 5}) {
    const auto at = html.find("id=\"tab-device-" + std::to_string(dev) + "\"");
    ASSERT_NE(at, std::string::npos) << dev;
    EXPECT_GT(at, last) << "ascending";
    last = at;
  }
  EXPECT_EQ(html.find("tab-device-3"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"tab-oom\">OOM</span>"), std::string::npos);
  EXPECT_EQ(embedded(html)["devices"].size(), 4u);
  // Only the first device's panel is shown when the page opens.
  EXPECT_EQ(count(html, "data-kind=\"trace\">"), 1u);
  EXPECT_EQ(count(html, "data-kind=\"trace\" hidden>"), 1u);
}

TEST(ReportHtml, ReadsAnalysisTolerantlyAndRejectsWrongTypes) {
  const snapshot s = three_devices();
  // Absent and null optional fields.
  EXPECT_NO_THROW(page(s, json::object()));
  EXPECT_NO_THROW(page(s, {{"devices", {{{"device", 0}}}}}));
  EXPECT_NO_THROW(page(
      s, {{"devices",
           {{{"device", 0}, {"oom", nullptr}, {"recommendation", nullptr}, {"modes", nullptr}}}}}));
  EXPECT_NO_THROW(page(s, {{"devices",
                            {{{"device", 1},
                              {"oom", {{"found", true}}},
                              {"modes", {{{"candidates", {json::object()}}}}}}}}}));
  const auto message = [&](const json& a) {
    try {
      page(s, a);
    } catch (const invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"schema", "keel.mem.analysis/2"}}).find("keel.mem.analysis/2"),
            std::string::npos);
  EXPECT_NE(message({{"devices", 3}}).find("devices"), std::string::npos);
  EXPECT_NE(message({{"devices", {{{"entries", 3}}}}}).find("devices[0].device"),
            std::string::npos);
  EXPECT_NE(message({{"devices", {{{"device", 0}, {"settings", 7}}}}}).find("devices[0].settings"),
            std::string::npos);
  EXPECT_NE(
      message({{"devices",
                {{{"device", 0}, {"modes", {{{"candidates", {{{"timeline", {{1, 2}}}}}}}}}}}}})
          .find("devices[0].modes[0].candidates[0].timeline[0]"),
      std::string::npos);
  EXPECT_THROW(page(s, json::array()), invalid_argument);
}

TEST(ReportHtml, PathOverloadWritesTheFileAndThrowsIoError) {
  const fs::path dir =
      fs::temp_directory_path() / ("keel-report-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "report.html";
  write_html_report(out.string(), three_devices(), fixture());
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, page(three_devices(), fixture()));
  EXPECT_THROW(
      write_html_report((dir / "missing" / "report.html").string(), three_devices(), nullptr),
      io_error);
  // A malformed analysis leaves no half-written page.
  EXPECT_THROW(
      write_html_report((dir / "bad.html").string(), three_devices(), {{"schema", "other/1"}}),
      invalid_argument);
  EXPECT_FALSE(fs::exists(dir / "bad.html"));
  fs::remove_all(dir);
}

TEST(ReportHtml, SyntheticTraceIsCompact) {
  synth_options o;
  o.steps = 4;
  const snapshot s = synthesize(o);
  const std::string html = page(s);
  const json data = embedded(html);
  const std::size_t n = s.device_traces[0].size();
  ASSERT_EQ(data["devices"][0]["trace"]["act"].size(), n);
  // Columnar: well under 100 bytes per event, script and style included.
  EXPECT_LT(html.size(), 60 * n + 200'000) << html.size() << " bytes for " << n << " events";
}

TEST(ReportHtml, RealSnapshots) {
  if (!fs::exists(k_traces)) GTEST_SKIP() << "shared traces not present: " << k_traces;
  for (const auto& f : fs::directory_iterator(k_traces)) {
    if (f.path().extension() != ".pickle") continue;
    SCOPED_TRACE(f.path().filename().string());
    const snapshot s = read_snapshot(f.path().string());
    const bool codeloc = f.path().filename() == "codeloc-qwen3-dp-train-oom.pickle";
    const std::string html = page(s, codeloc ? fixture() : json(nullptr));
    const json data = embedded(html);
    std::size_t entries = 0;
    for (const json& d : data["devices"]) entries += d["trace"]["act"].size();
    std::size_t expected = 0;
    for (const auto& t : s.device_traces) expected += t.size();
    EXPECT_EQ(entries, expected);
    // Columnar and deduplicated: the page is smaller than the pickle plus script and style.
    EXPECT_LT(html.size(), fs::file_size(f.path()) + 200'000);
    if (codeloc) {
      EXPECT_NE(html.find("id=\"device-1-oom\""), std::string::npos);
      EXPECT_EQ(data["devices"][1]["trace"]["oom_at"], json::array({421}));
    }
  }
}

}  // namespace
}  // namespace keel::memory
