// The HTML report's embedded data: what report/report.js draws from.

#include "report_html_parts.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/core/output_file.hpp"
#include "keel/core/xml_escape.hpp"
#include "keel/memory/callsites.hpp"

namespace keel::memory::report_detail {
namespace {

class tables {
 public:
  explicit tables(std::size_t max_frames) : max_frames_(max_frames) {
    stacks_.push_back(json::array());  // stack 0: no frames recorded
    add_site(frame_stack{});
  }

  int stack(const frame_stack& s) {
    if (s.empty()) return 0;
    if (const auto it = by_identity_.find(s.identity()); it != by_identity_.end())
      return it->second;
    std::vector<int> ids;
    const std::size_t n = max_frames_ == 0 ? s.size() : std::min(s.size(), max_frames_);
    ids.reserve(n);
    for (std::size_t i = 0; i < n; ++i) ids.push_back(frame_id(s[i]));
    auto [it, added] = by_content_.try_emplace(ids, static_cast<int>(stacks_.size()));
    if (added) {
      stacks_.push_back(ids);
      add_site(s);
    }
    by_identity_.emplace(s.identity(), it->second);
    return it->second;
  }

  int stream(std::uint64_t raw) {
    auto [it, added] = streams_.try_emplace(raw, static_cast<int>(stream_list_.size()));
    if (added) stream_list_.push_back(fmt::format("{:#x}", raw));
    return it->second;
  }

  json to_json() const {
    json categories = json::array();
    for (std::size_t c = 0; c < k_memory_categories; ++c) {
      categories.push_back(std::string(to_string(static_cast<memory_category>(c))));
    }
    return {{"strings", strings_}, {"frames", frames_},        {"stacks", stacks_},
            {"sites", sites_},     {"categories", categories}, {"streams", stream_list_}};
  }

 private:
  // Per stack, where keel's call-site rules (callsites.hpp) attribute it: the site, its
  // module, the category and the attributed frame, so the page groups as the analysis does.
  void add_site(const frame_stack& s) {
    const attribution a = attribute(s);
    sites_.push_back(
        {string_id(a.site), string_id(a.module), static_cast<int>(a.category), a.frame});
  }
  int string_id(const std::string& s) {
    auto [it, added] = strings_by_text_.try_emplace(s, static_cast<int>(strings_.size()));
    if (added) strings_.push_back(s);
    return it->second;
  }
  int frame_id(const frame& f) {
    const auto key = std::tuple(string_id(f.filename), f.line, string_id(f.name));
    auto [it, added] = frame_ids_.try_emplace(key, static_cast<int>(frames_.size() / 3));
    if (added) {
      frames_.push_back(std::get<0>(key));
      frames_.push_back(f.line);
      frames_.push_back(std::get<2>(key));
    }
    return it->second;
  }

  std::size_t max_frames_;
  std::unordered_map<std::string, int> strings_by_text_;
  json strings_ = json::array();
  std::map<std::tuple<int, std::int64_t, int>, int> frame_ids_;
  json frames_ = json::array();  // flat (string, line, string) triples
  std::unordered_map<const void*, int> by_identity_;
  std::map<std::vector<int>, int> by_content_;
  json stacks_ = json::array();
  json sites_ = json::array();  // parallel to stacks_
  std::map<std::uint64_t, int> streams_;
  std::vector<std::string> stream_list_;
};

int action_code(trace_action a) { return static_cast<int>(a); }

// Addresses are written relative to the smallest non-zero address of the snapshot, so they stay
// exact as JavaScript doubles and short; 0 (entries without an address) is written as -1.
struct address_base {
  std::uint64_t base = 0;
  json rel(std::uint64_t addr) const {
    if (addr == 0 || addr < base) return -1;
    return addr - base;
  }
};

address_base find_base(const snapshot& s) {
  std::uint64_t lo = std::numeric_limits<std::uint64_t>::max();
  for (const snapshot_segment& seg : s.segments) {
    if (seg.address != 0) lo = std::min(lo, seg.address);
  }
  for (const auto& trace : s.device_traces) {
    for (const trace_entry& e : trace) {
      if (e.addr != 0) lo = std::min(lo, e.addr);
    }
  }
  return {lo == std::numeric_limits<std::uint64_t>::max() ? 0 : lo};
}

json trace_columns(const std::vector<trace_entry>& trace, tables& t, const address_base& base) {
  json act = json::array(), addr = json::array(), size = json::array(), stream = json::array(),
       stack = json::array(), oom_at = json::array(), oom_free = json::array();
  bool any_stream = false;
  std::optional<std::int64_t> t0;
  for (const trace_entry& e : trace) {
    if (e.time_us && !t0) t0 = *e.time_us;
  }
  json time = t0 ? json::array() : json(nullptr);
  std::int64_t last = t0.value_or(0);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const trace_entry& e = trace[i];
    act.push_back(action_code(e.action));
    addr.push_back(base.rel(e.addr));
    size.push_back(e.size);
    const int sid = t.stream(e.stream);
    any_stream = any_stream || e.stream != 0;
    stream.push_back(sid);
    stack.push_back(t.stack(e.frames));
    if (t0) {
      if (e.time_us) last = *e.time_us;
      time.push_back(last - *t0);
    }
    if (e.action == trace_action::oom) {
      oom_at.push_back(i);
      oom_free.push_back(e.device_free);
    }
  }
  json out = {{"act", std::move(act)},       {"addr", std::move(addr)},
              {"size", std::move(size)},     {"stack", std::move(stack)},
              {"time", std::move(time)},     {"t0", t0 ? json(*t0) : json(nullptr)},
              {"oom_at", std::move(oom_at)}, {"oom_free", std::move(oom_free)}};
  out["stream"] = any_stream ? std::move(stream) : json(nullptr);
  return out;
}

json segment_columns(const snapshot& s, int device, tables& t, const address_base& base) {
  json seg_addr = json::array(), seg_size = json::array(), seg_stream = json::array(),
       seg_flags = json::array(), seg_stack = json::array(), seg_pool = json::array(),
       seg_first = json::array();
  json b_addr = json::array(), b_size = json::array(), b_req = json::array(),
       b_state = json::array(), b_stack = json::array();
  std::vector<const snapshot_segment*> segs;
  for (const snapshot_segment& seg : s.segments) {
    if (seg.device == device) segs.push_back(&seg);
  }
  std::stable_sort(segs.begin(), segs.end(),
                   [](const auto* a, const auto* b) { return a->address < b->address; });
  std::size_t blocks = 0;
  for (const snapshot_segment* seg : segs) {
    seg_addr.push_back(base.rel(seg->address));
    seg_size.push_back(seg->total_size);
    seg_stream.push_back(t.stream(seg->stream));
    seg_flags.push_back((seg->is_large ? 1 : 0) | (seg->is_expandable ? 2 : 0));
    seg_stack.push_back(t.stack(seg->frames));
    seg_pool.push_back(json::array({seg->pool_id.first, seg->pool_id.second}));
    seg_first.push_back(blocks);
    for (const snapshot_block& b : seg->blocks) {
      b_addr.push_back(base.rel(b.address));
      b_size.push_back(b.size);
      b_req.push_back(b.requested_size);
      b_state.push_back(b.state == block_state::active_allocated      ? 1
                        : b.state == block_state::active_pending_free ? 2
                                                                      : 0);
      b_stack.push_back(t.stack(b.frames));
      ++blocks;
    }
  }
  seg_first.push_back(blocks);
  return {{"addr", std::move(seg_addr)},     {"size", std::move(seg_size)},
          {"stream", std::move(seg_stream)}, {"flags", std::move(seg_flags)},
          {"stack", std::move(seg_stack)},   {"pool", std::move(seg_pool)},
          {"first", std::move(seg_first)},   {"b_addr", std::move(b_addr)},
          {"b_size", std::move(b_size)},     {"b_req", std::move(b_req)},
          {"b_state", std::move(b_state)},   {"b_stack", std::move(b_stack)}};
}

// A candidate timeline as three columns, reduced to at most `limit` buckets of consecutive
// entries holding the maxima of allocated and reserved (never a sample: a sample could show
// reserved below allocated, or miss the peak).
json timeline_columns(const json& timeline, const std::string& path, std::size_t limit) {
  struct point {
    double entry, allocated, reserved;
  };
  std::vector<point> pts;
  pts.reserve(timeline.size());
  for (std::size_t i = 0; i < timeline.size(); ++i) {
    const json& p = timeline[i];
    if (!p.is_array() || p.size() < 3 || !p[0].is_number() || !p[1].is_number() ||
        !p[2].is_number()) {
      bad_field(fmt::format("{}[{}]", path, i), "[entry, allocated, reserved]");
    }
    pts.push_back({p[0].get<double>(), p[1].get<double>(), p[2].get<double>()});
  }
  json e = json::array(), a = json::array(), r = json::array();
  const auto emit = [&](const point& p) {
    e.push_back(static_cast<std::int64_t>(p.entry));
    a.push_back(static_cast<std::uint64_t>(std::max(0.0, p.allocated)));
    r.push_back(static_cast<std::uint64_t>(std::max(0.0, p.reserved)));
  };
  if (limit < 2 || pts.size() <= limit) {
    for (const point& p : pts) emit(p);
  } else {
    const double first = pts.front().entry, last = pts.back().entry;
    const double width = std::max(1.0, std::ceil((last - first + 1) / static_cast<double>(limit)));
    std::size_t i = 0;
    while (i < pts.size()) {
      const double bucket = std::floor((pts[i].entry - first) / width);
      point acc = pts[i];
      for (++i; i < pts.size() && std::floor((pts[i].entry - first) / width) == bucket; ++i) {
        acc.allocated = std::max(acc.allocated, pts[i].allocated);
        acc.reserved = std::max(acc.reserved, pts[i].reserved);
      }
      emit(acc);
    }
  }
  return {{"e", std::move(e)}, {"a", std::move(a)}, {"r", std::move(r)}};
}

// What the script needs from one analysis device: the modes and their candidates.
json analysis_for_script(const json& dev, const std::string& path, const report_options& o) {
  json out = json::object();
  json modes = json::array();
  const json& in_modes = opt_array(dev, "modes", path);
  for (std::size_t m = 0; m < in_modes.size(); ++m) {
    const std::string mp = fmt::format("{}.modes[{}]", path, m);
    const json& mode = in_modes[m];
    if (!mode.is_object()) bad_field(mp, "an object");
    json jm = {
        {"mode", opt_string(mode, "mode", mp).value_or("")},
        {"label", opt_string(mode, "label", mp).value_or("")},
        {"best", opt_int(mode, "best", mp) ? json(*opt_int(mode, "best", mp)) : json(nullptr)},
        {"cands", json::array()}};
    const json& cands = opt_array(mode, "candidates", mp);
    for (std::size_t c = 0; c < cands.size(); ++c) {
      const std::string cp = fmt::format("{}.candidates[{}]", mp, c);
      const json& cand = cands[c];
      if (!cand.is_object()) bad_field(cp, "an object");
      json jc = timeline_columns(opt_array(cand, "timeline", cp), cp + ".timeline",
                                 o.max_timeline_points);
      jc["label"] = opt_string(cand, "label", cp).value_or(fmt::format("candidate {}", c));
      jc["recorded"] = opt_bool(cand, "recorded", cp).value_or(false);
      jc["policy"] = opt_string(cand, "policy", cp).value_or("");
      const auto oom_entry = opt_int(cand, "oom_entry", cp);
      jc["oom_entry"] = oom_entry ? json(*oom_entry) : json(nullptr);
      jm["cands"].push_back(std::move(jc));
    }
    modes.push_back(std::move(jm));
  }
  out["modes"] = std::move(modes);
  if (const json* oom = opt_object(dev, "oom", path)) {
    const auto entry = opt_int(*oom, "entry", path + ".oom");
    out["oom_entry"] = entry ? json(*entry) : json(nullptr);
  }
  if (const json* rec = opt_object(dev, "recorded", path)) {
    const auto budget = opt_bytes(*rec, "budget", path + ".recorded");
    out["budget"] = budget ? json(*budget) : json(nullptr);
  }
  return out;
}

}  // namespace

// The page's JSON, safe inside <script>: '<', '>' and '&' only occur inside JSON strings, where
// \u escapes read back as the same characters; U+2028/2029 are escaped for older parsers.
std::string script_safe(const std::string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

// --- the static sections ---

json embedded_data(const snapshot& snap, const std::map<int, device_info>& devices,
                   const std::string& name, const report_options& options) {
  tables t(options.max_frames_per_stack);
  const address_base base = find_base(snap);
  json data = {
      {"v", 1}, {"trace", name}, {"base", std::to_string(base.base)}, {"devices", json::array()}};
  for (const auto& [dev, d] : devices) {
    json jd = {{"device", dev}, {"entries", d.entries}};
    static const std::vector<trace_entry> no_trace;
    const auto& trace = static_cast<std::size_t>(dev) < snap.device_traces.size() && dev >= 0
                            ? snap.device_traces[static_cast<std::size_t>(dev)]
                            : no_trace;
    jd["trace"] = trace_columns(trace, t, base);
    jd["segments"] = segment_columns(snap, dev, t, base);
    jd["analysis"] = d.analysis ? analysis_for_script(*d.analysis, d.path, options) : json(nullptr);
    data["devices"].push_back(std::move(jd));
  }
  data["tables"] = t.to_json();
  if (snap.settings) data["settings"] = snap.settings->conf;

  return data;
}

}  // namespace keel::memory::report_detail
