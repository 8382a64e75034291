// The HTML report in a real browser: headless Chromium loads the page (file://, no network),
// its script draws every chart, and the DOM it leaves behind (--dump-dom) says what was drawn
// and how long it took (<html data-rendered-ms>: from navigation start until the first
// device's charts were drawn). A 19k-event real trace must render in under 2 s and a
// 100k-event synthetic one in under 5 s. Skips with a message when no Chromium is installed
// (KEEL_CHROMIUM names one explicitly). Screenshots go to the build directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "keel/memory/replay.hpp"
#include "keel/memory/report_html.hpp"
#include "keel/memory/synth.hpp"
#include "keel/memory/trace_model.hpp"
#include "process.hpp"

namespace keel::memory {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path k_traces = fs::path(KEEL_SHARED_DIR) / "traces" / "pytorch";
const fs::path k_data = fs::path(KEEL_SOURCE_DIR) / "tests" / "data" / "memory";
const fs::path k_out = fs::path(KEEL_BINARY_DIR) / "tests" / "memory" / "report";

std::optional<std::string> find_chromium() {
  if (const char* env = std::getenv("KEEL_CHROMIUM"); env && *env) {
    if (fs::exists(env)) return std::string(env);
    return std::nullopt;
  }
  std::vector<fs::path> dirs = {"/usr/bin"};
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (std::size_t at = 0; at <= p.size();) {
      const auto end = std::min(p.find(':', at), p.size());
      if (end > at) dirs.emplace_back(p.substr(at, end - at));
      at = end + 1;
    }
  }
  for (const fs::path& dir : dirs) {
    for (const char* name :
         {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
      if (::access((dir / name).c_str(), X_OK) == 0) return (dir / name).string();
    }
  }
  return std::nullopt;
}

#define REQUIRE_CHROMIUM()                                                                      \
  const std::optional<std::string> chromium = find_chromium();                                  \
  do {                                                                                          \
    if (!chromium) GTEST_SKIP() << "no Chromium found (install chromium or set KEEL_CHROMIUM)"; \
  } while (0)

struct loaded {
  std::string dom;  // --dump-dom: the DOM after the page's script ran
  std::string log;  // stderr, with the page's console messages
  double seconds = 0;
};

// One headless Chromium run on `page` with a fresh profile. `mode` is "--dump-dom" or
// "--screenshot=PATH".
loaded run_chromium(const std::string& chromium, const fs::path& page, const std::string& fragment,
                    const std::string& mode, const std::string& window = "1400,1000",
                    const std::vector<std::string>& extra = {}) {
  const fs::path profile =
      fs::temp_directory_path() /
      ("keel-chromium-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  fs::create_directories(profile);
  std::vector<std::string> argv = {chromium,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-quic",
                                   "--no-first-run",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--disable-extensions",
                                   "--hide-scrollbars",
                                   "--enable-logging=stderr",
                                   "--user-data-dir=" + profile.string(),
                                   "--window-size=" + window,
                                   mode};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("file://" + fs::absolute(page).string() + fragment);
  const test::process_result r = test::run_process(argv, 180);
  std::error_code ec;
  fs::remove_all(profile, ec);
  EXPECT_FALSE(r.timed_out) << chromium << " did not finish";
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return {r.out, r.err, r.seconds};
}

// The value of attribute `name` on the first element that has it, or "".
std::string attribute(const std::string& dom, const std::string& name,
                      const std::string& element_id = {}) {
  std::string scope = dom;
  if (!element_id.empty()) {
    const auto at = dom.find("id=\"" + element_id + "\"");
    if (at == std::string::npos) return {};
    const auto open = dom.rfind('<', at);
    scope = dom.substr(open, dom.find('>', at) - open + 1);
  }
  std::smatch m;
  if (std::regex_search(scope, m, std::regex(" " + name + "=\"([^\"]*)\""))) return m[1];
  return {};
}

std::string html_tag(const std::string& dom) {
  const auto at = dom.find("<html");
  return at == std::string::npos ? std::string() : dom.substr(at, dom.find('>', at) - at + 1);
}

void expect_no_script_errors(const loaded& l) {
  EXPECT_EQ(l.log.find("Uncaught"), std::string::npos) << l.log;
  EXPECT_EQ(l.log.find("CONSOLE"), std::string::npos) << l.log;
}

// An analysis of the trace made with keel's replay, as the analysis layer would: the recorded
// settings and two other candidates, one mode, 4096-point timelines, the fidelity line and a
// recommendation of the best PyTorch setting when it saves memory.
json replay_analysis(const snapshot& s, const std::string& name) {
  json devices = json::array();
  for (int dev : devices_in(s)) {
    if (static_cast<std::size_t>(dev) >= s.device_traces.size() ||
        s.device_traces[static_cast<std::size_t>(dev)].empty()) {
      continue;
    }
    const trace_model m = build_trace_model(s, dev);
    json cands = json::array();
    json d = {{"device", dev},
              {"entries", m.entries},
              {"comparable", true},
              {"settings", m.recorded_config.pytorch_string()}};
    std::int64_t baseline = 0, best = 0, best_saving = 0;
    const std::vector<std::pair<const char*, const char*>> candidates = {
        {"recorded settings", ""},
        {"expandable segments", "expandable_segments:True"},
        {"keel policy", "policy:keel"}};
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      replay_options o;
      o.config = allocator_config::parse(candidates[k].second, "test", m.recorded_config);
      o.timeline_points = 4096;
      const replay_result r = replay(m, o);
      const auto peak = static_cast<std::int64_t>(r.peak_reserved);
      if (k == 0) {
        baseline = peak;
        d["recorded"] = {{"peak_reserved", r.peak_reserved}, {"budget", nullptr}};
        if (r.fidelity && !r.fidelity->first_mismatch) {
          d["fidelity"] = {{"exact", true},
                           {"line", "replay of the recorded settings reproduces all " +
                                        std::to_string(r.fidelity->recorded_segments) +
                                        " segment events and the peak"}};
        }
      }
      json tl = json::array();
      for (const timeline_point& p : r.timeline) tl.push_back({p.entry, p.allocated, p.reserved});
      const std::string conf = o.config.pytorch_string();
      const bool keel = r.policy == policy_kind::keel;
      if (!keel && baseline - peak > best_saving)
        best = static_cast<std::int64_t>(k), best_saving = baseline - peak;
      cands.push_back(
          {{"label", candidates[k].first},
           {"conf", conf},
           {"policy", std::string(to_string(r.policy))},
           {"recorded", k == 0},
           {"env", keel ? "KEEL_ALLOC_CONF=policy:keel" : "PYTORCH_CUDA_ALLOC_CONF=" + conf},
           {"peak_reserved", r.peak_reserved},
           {"peak_allocated", r.peak_allocated},
           {"saving", baseline - peak},
           {"fragmentation", r.fragmentation},
           {"device_mallocs", r.device_mallocs},
           {"oom", !r.ooms.empty()},
           {"timeline", std::move(tl)}});
    }
    if (best > 0) {
      const std::string conf = cands[static_cast<std::size_t>(best)]["conf"];
      d["recommendation"] = {
          {"mode", "window"},
          {"candidate", best},
          {"title", "Set PYTORCH_CUDA_ALLOC_CONF=" + conf},
          {"saving", best_saving},
          {"steps",
           {{{"kind", "shell"}, {"text", "export PYTORCH_CUDA_ALLOC_CONF=" + conf}},
            {{"kind", "python"},
             {"text", "import os\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"" + conf +
                          "\"  # before the first CUDA allocation"}}}},
          {"costs",
           {std::to_string(
                cands[static_cast<std::size_t>(best)]["device_mallocs"].get<std::int64_t>()) +
            " driver calls in this window instead of " +
            std::to_string(cands[0]["device_mallocs"].get<std::int64_t>())}}};
    }
    d["modes"] = {{{"mode", "window"},
                   {"label", "this window (the recorded segments at its start)"},
                   {"candidates", std::move(cands)},
                   {"best_pytorch", best}}};
    devices.push_back(std::move(d));
  }
  return {{"schema", k_analysis_schema}, {"trace", name}, {"devices", std::move(devices)}};
}

fs::path write_page(const std::string& file, const snapshot& s, const json& analysis) {
  fs::create_directories(k_out);
  const fs::path page = k_out / file;
  write_html_report(page.string(), s, analysis);
  return page;
}

// The allocator state the page walked back from the final segments to the selected entry
// must hold what the trace's running totals say at that entry.
void expect_state_matches_trace(const loaded& l, const std::string& entry) {
  const auto at = l.dom.find("data-selected=\"" + entry + "\"");
  ASSERT_NE(at, std::string::npos) << "entry " << entry << " not selected";
  const auto seg = l.dom.find("data-chart=\"segments\"", at);
  ASSERT_NE(seg, std::string::npos);
  const std::string tag = l.dom.substr(seg, l.dom.find('>', seg) - seg);
  EXPECT_NE(attribute(tag, "data-reserved"), "");
  EXPECT_EQ(attribute(tag, "data-reserved"), attribute(tag, "data-trace-reserved")) << tag;
  EXPECT_EQ(attribute(tag, "data-allocated"), attribute(tag, "data-trace-allocated")) << tag;
}

double rendered_ms(const loaded& l) {
  const std::string v = attribute(html_tag(l.dom), "data-rendered-ms");
  EXPECT_FALSE(v.empty()) << "the page's script did not finish";
  return v.empty() ? 1e9 : std::stod(v);
}

TEST(ReportHtmlBrowser, RealTraceOf19kEventsRendersInUnder2s) {
  REQUIRE_CHROMIUM();
  const fs::path trace = k_traces / "cs336a2kk-ctx128-fullstep.pickle";
  if (!fs::exists(trace)) GTEST_SKIP() << "shared trace not present: " << trace;
  const snapshot s = read_snapshot(trace.string());
  const fs::path page = write_page("cs336a2kk-ctx128-fullstep.html", s,
                                   replay_analysis(s, trace.filename().string()));
  const loaded l = run_chromium(*chromium, page, "", "--dump-dom");
  expect_no_script_errors(l);
  const double ms = rendered_ms(l);
  std::cout << "[ report ] " << trace.filename().string() << " (19342 events): rendered in " << ms
            << " ms\n";
  RecordProperty("rendered_ms", std::to_string(ms));
  EXPECT_LT(ms, 2000);
  // What was drawn: the timeline's columns, the segment map of the final state, and never
  // reserved below allocated.
  EXPECT_NE(attribute(l.dom, "data-columns", "device-0"), "");
  EXPECT_EQ(attribute(l.dom, "data-reserved-below-allocated", "device-0"), "0");
  // Lines: the recording and the candidates plotted by default (the recorded settings, the
  // best and the first two: here candidates 0 and 1).
  EXPECT_NE(l.dom.find("data-chart=\"lines\" data-drawn=\"3\""), std::string::npos);
  EXPECT_NE(l.dom.find("data-segments=\"1010\" data-blocks=\"1201\""), std::string::npos);
  EXPECT_NE(l.dom.find("Whole trace"), std::string::npos) << "the range line";
  // A link to an entry inside a zoomed range, and to the state before the first entry (the
  // window began with 13,763,608,576 bytes reserved, SOURCES.md).
  const loaded zoomed =
      run_chromium(*chromium, page, "#cuda:0&entry=5000&range=4000-9000", "--dump-dom");
  expect_no_script_errors(zoomed);
  expect_state_matches_trace(zoomed, "5000");
  EXPECT_NE(zoomed.dom.find("Range "), std::string::npos);
  const loaded start = run_chromium(*chromium, page, "#cuda:0&entry=-1", "--dump-dom");
  expect_state_matches_trace(start, "-1");
  EXPECT_NE(start.dom.find("data-reserved=\"13763608576\""), std::string::npos);
  run_chromium(*chromium, page, "",
               "--screenshot=" + (k_out / "cs336a2kk-ctx128-fullstep.png").string());
  EXPECT_TRUE(fs::exists(k_out / "cs336a2kk-ctx128-fullstep.png"));
}

TEST(ReportHtmlBrowser, SyntheticTraceOf100kEventsRendersInUnder5s) {
  REQUIRE_CHROMIUM();
  synth_options o;
  o.steps = 84;  // about 1190 entries per step: 99698 entries
  const snapshot s = synthesize(o);
  ASSERT_GE(s.device_traces[0].size(), 99'000u);
  const fs::path page =
      write_page("synth-train-100k.html", s, replay_analysis(s, "synth train --steps 84"));
  const loaded l = run_chromium(*chromium, page, "", "--dump-dom");
  expect_no_script_errors(l);
  const double ms = rendered_ms(l);
  std::cout << "[ report ] synthetic (" << s.device_traces[0].size() << " events): rendered in "
            << ms << " ms\n";
  RecordProperty("rendered_ms", std::to_string(ms));
  EXPECT_LT(ms, 5000);
  EXPECT_EQ(attribute(l.dom, "data-reserved-below-allocated", "device-0"), "0");
}

TEST(ReportHtmlBrowser, MultiDeviceTraceWithAnOom) {
  REQUIRE_CHROMIUM();
  const fs::path trace = k_traces / "codeloc-qwen3-dp-train-oom.pickle";
  if (!fs::exists(trace)) GTEST_SKIP() << "shared trace not present: " << trace;
  std::ifstream in(k_data / "report_analysis_codeloc.json");
  const snapshot s = read_snapshot(trace.string());
  const fs::path page = write_page("codeloc-qwen3-dp-train-oom.html", s, json::parse(in));
  // The OOM's device, chosen by the URL: its panel is drawn, the others wait for their tab.
  const loaded l = run_chromium(*chromium, page, "#cuda:1&entry=421", "--dump-dom");
  expect_no_script_errors(l);
  for (int dev : {0, 1, 2})
    EXPECT_NE(l.dom.find("id=\"tab-device-" + std::to_string(dev) + "\""), std::string::npos);
  EXPECT_NE(attribute(l.dom, "data-rendered-ms", "device-1"), "");
  EXPECT_EQ(attribute(l.dom, "data-rendered-ms", "device-0"), "");
  EXPECT_EQ(attribute(l.dom, "data-reserved-below-allocated", "device-1"), "0");
  EXPECT_NE(l.dom.find("class=\"tab active\" id=\"tab-device-1\""), std::string::npos);
  EXPECT_NE(l.dom.find("id=\"device-1-oom\""), std::string::npos);
  EXPECT_NE(l.dom.find("class=\"ev-oom bad\""), std::string::npos) << "the OOM is selectable";
  // The state at the OOM: 84,202,749,952 bytes mapped (SOURCES.md), as the trace says.
  expect_state_matches_trace(l, "421");
  EXPECT_NE(l.dom.find("data-reserved=\"84202749952\""), std::string::npos);
  EXPECT_NE(l.dom.find("<span class=\"ev-action oom\">oom</span>"), std::string::npos);
  run_chromium(*chromium, page, "#cuda:1",
               "--screenshot=" + (k_out / "codeloc-device-1.png").string(), "1400,2600");
}

TEST(ReportHtmlBrowser, StateOnlySnapshotShowsItsSegments) {
  REQUIRE_CHROMIUM();
  const fs::path trace = k_traces / "verl-megatron-init-state.pickle";
  if (!fs::exists(trace)) GTEST_SKIP() << "shared trace not present: " << trace;
  const snapshot s = read_snapshot(trace.string());
  const fs::path page = write_page("verl-megatron-init-state.html", s, nullptr);
  const loaded l = run_chromium(*chromium, page, "", "--dump-dom");
  expect_no_script_errors(l);
  EXPECT_EQ(attribute(l.dom, "data-kind", "device-0"), "state");
  EXPECT_NE(l.dom.find("data-segments=\"127\""), std::string::npos);
  EXPECT_NE(l.dom.find("class=\"sites\""), std::string::npos) << "call sites of the live memory";
  run_chromium(*chromium, page, "",
               "--screenshot=" + (k_out / "verl-megatron-init-state.png").string());
}

// Drives the page as a user would: a script appended after the report's own (so the page's
// code is the shipped one) hovers, clicks, drags, wheels, switches tabs, colours and lines,
// and steps with the keyboard, then writes what it saw into <html data-test>. Virtual time
// lets the page's animation frames run before the DOM is dumped.
constexpr const char* k_interaction_script = R"js(
(function () {
  const res = {};
  const panel = () => document.querySelector('.device-panel:not([hidden])');
  const p = panel();
  const active = p.querySelector('[data-chart=active] canvas.plot');
  const r = active.getBoundingClientRect();
  const at = (fx, fy) => ({ clientX: r.left + 66 + (r.width - 80) * fx, clientY: r.top + 10 + (r.height - 34) * fy, button: 0, bubbles: true });
  const mouse = (target, type, pt) => target.dispatchEvent(new MouseEvent(type, pt));
  // Hover near the bottom right: an allocation, its tooltip, its stack below the chart.
  mouse(active, 'mousemove', at(0.97, 0.95));
  res.tooltip = !p.querySelector('[data-chart=active] .tooltip').hidden;
  res.stack = p.querySelector('.stack-frames').textContent.length;
  res.highlight = !!p.querySelector('[data-chart=active] canvas.highlight');
  // Click: the allocator state at that moment.
  mouse(active, 'mousedown', at(0.5, 0.5));
  mouse(window, 'mouseup', at(0.5, 0.5));
  res.clicked = p.dataset.selected;
  // Keyboard: one entry back.
  document.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowLeft', bubbles: true }));
  res.stepped = p.dataset.selected;
  // Waits (polling; the page redraws on animation frames) until cond() holds, then runs next.
  const when = (cond, next, tries = 80) => cond() || tries === 0 ? next() : setTimeout(() => when(cond, next, tries - 1), 50);
  const range = () => p.querySelector('.range-info').textContent;
  // Drag from 40% to 60%: zoom to that range.
  mouse(active, 'mousedown', at(0.4, 0.5));
  mouse(active, 'mousemove', at(0.6, 0.5));
  mouse(window, 'mouseup', at(0.6, 0.5));
  when(() => range().startsWith('Range'), () => {
    res.dragged = range();
    p.querySelector('.zoom-reset').click();
    when(() => range().startsWith('Whole'), () => {
      res.reset = range();
      active.dispatchEvent(new WheelEvent('wheel', { ...at(0.9, 0.5), deltaY: -600, cancelable: true }));
      when(() => range().startsWith('Range'), () => {
        res.wheeled = range();
        // Lines: hide a candidate.
        const lines = p.querySelector('[data-chart=lines]');
        res.series = lines.dataset.series;
        const box = p.querySelector('.candidates input[type=checkbox]:checked');
        box.checked = false; box.dispatchEvent(new Event('change'));
        res.seriesAfter = lines.dataset.series;
        // Colour by category.
        const sel = p.querySelector('.color-select');
        sel.value = 'category'; sel.dispatchEvent(new Event('change'));
        res.key = p.querySelector('.color-key').textContent;
        // Another tab.
        document.querySelector('#tab-device-2').click();
        res.tab = panel().id;
        res.tabRendered = panel().dataset.renderedMs || '';
        document.documentElement.setAttribute('data-test', JSON.stringify(res));
      });
    });
  });
})();
)js";

TEST(ReportHtmlBrowser, InteractionsWork) {
  REQUIRE_CHROMIUM();
  const fs::path trace = k_traces / "codeloc-qwen3-dp-train-oom.pickle";
  if (!fs::exists(trace)) GTEST_SKIP() << "shared trace not present: " << trace;
  std::ifstream in(k_data / "report_analysis_codeloc.json");
  std::ostringstream html;
  write_html_report(html, read_snapshot(trace.string()), json::parse(in));
  std::string text = html.str();
  text.insert(text.rfind("</body>"), std::string("<script>") + k_interaction_script + "</script>");
  fs::create_directories(k_out);
  const fs::path page = k_out / "codeloc-interactions.html";
  std::ofstream(page) << text;
  const loaded l =
      run_chromium(*chromium, page, "", "--dump-dom", "1400,1000", {"--virtual-time-budget=20000"});
  expect_no_script_errors(l);
  const std::string raw = attribute(html_tag(l.dom), "data-test");
  ASSERT_FALSE(raw.empty()) << "the interaction script did not finish";
  std::string unescaped = std::regex_replace(raw, std::regex("&quot;"), "\"");
  unescaped = std::regex_replace(unescaped, std::regex("&amp;"), "&");
  const json res = json::parse(unescaped);
  EXPECT_TRUE(res["tooltip"].get<bool>()) << res;
  EXPECT_GT(res["stack"].get<int>(), 10) << res;
  EXPECT_TRUE(res["highlight"].get<bool>()) << res;
  ASSERT_TRUE(res["clicked"].is_string()) << res;
  EXPECT_EQ(std::stoi(res["stepped"].get<std::string>()),
            std::stoi(res["clicked"].get<std::string>()) - 1)
      << res;
  EXPECT_EQ(res["dragged"].get<std::string>().rfind("Range ", 0), 0u) << res;
  EXPECT_EQ(res["reset"].get<std::string>().rfind("Whole trace", 0), 0u) << res;
  EXPECT_EQ(res["wheeled"].get<std::string>().rfind("Range ", 0), 0u) << res;
  EXPECT_EQ(std::stoi(res["seriesAfter"].get<std::string>()),
            std::stoi(res["series"].get<std::string>()) - 1)
      << res;
  EXPECT_NE(res["key"].get<std::string>().find("activation"), std::string::npos) << res;
  EXPECT_EQ(res["tab"], "device-2") << res;
  EXPECT_NE(res["tabRendered"], "") << res;
}

TEST(ReportHtmlBrowser, HostileNamesDoNotRun) {
  REQUIRE_CHROMIUM();
  // A frame name and a file name that would run script if the page pasted them as HTML.
  const frame_stack evil{
      {"<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','img')\">", 1,
       "</script><script>document.documentElement.setAttribute('data-pwned','script')</script>"}};
  snapshot s;
  snapshot_segment seg;
  seg.address = 0x7f0000000000;
  seg.total_size = 2u << 20;
  seg.blocks = {{seg.address, 2u << 20, 1u << 20, block_state::active_allocated, evil}};
  s.segments = {seg};
  trace_entry e;
  e.action = trace_action::alloc;
  e.addr = seg.address;
  e.size = 1u << 20;
  e.time_us = 5;
  e.frames = evil;
  s.device_traces = {{e}};
  json analysis = {
      {"devices",
       {{{"device", 0},
         {"callsites_at_peak",
          {{{"site",
             "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','site')\">"},
            {"bytes", 1},
            {"count", 1}}}}}}}};
  const fs::path page = write_page("hostile.html", s, analysis);
  const loaded l = run_chromium(*chromium, page, "", "--dump-dom");
  expect_no_script_errors(l);
  EXPECT_EQ(html_tag(l.dom).find("data-pwned"), std::string::npos) << html_tag(l.dom);
  EXPECT_NE(attribute(html_tag(l.dom), "data-rendered-ms"), "") << "the page's own script ran";
}

}  // namespace
}  // namespace keel::memory
