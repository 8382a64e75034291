// The HTML report: static sections written here (escaped), the interactive parts drawn by
// report/report.js from the embedded columnar data. See include/keel/memory/report_html.hpp.
#include "keel/memory/report_html.hpp"

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

namespace keel::memory {

// Defined in the generated report_assets.cpp (src/memory/report/embed.cmake).
namespace report_assets {
extern const char* const k_script;
extern const char* const k_style;
}  // namespace report_assets

namespace {

using nlohmann::json;

// --- reading the analysis: absent or null is "not there"; a wrong type is an error ---

[[noreturn]] void bad_field(const std::string& path, std::string_view expected) {
  throw invalid_argument(fmt::format("analysis {}: expected {}", path, expected));
}

const json* field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::string> opt_string(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) bad_field(path + "." + key, "a string");
  return v->get<std::string>();
}

std::optional<double> opt_number(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad_field(path + "." + key, "a number");
  return v->get<double>();
}

std::optional<std::int64_t> opt_int(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    return u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? std::numeric_limits<std::int64_t>::max()
               : static_cast<std::int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d)) bad_field(path + "." + key, "a finite number");
    return static_cast<std::int64_t>(std::llround(d));
  }
  bad_field(path + "." + key, "an integer");
}

std::optional<std::uint64_t> opt_bytes(const json& obj, const char* key, const std::string& path) {
  const auto v = opt_int(obj, key, path);
  if (!v) return std::nullopt;
  if (*v < 0) bad_field(path + "." + key, "a byte count (>= 0)");
  return static_cast<std::uint64_t>(*v);
}

std::optional<bool> opt_bool(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad_field(path + "." + key, "true or false");
  return v->get<bool>();
}

const json& empty_array() {
  static const json none = json::array();
  return none;
}

const json& opt_array(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return empty_array();
  if (!v->is_array()) bad_field(path + "." + key, "an array");
  return *v;
}

const json* opt_object(const json& obj, const char* key, const std::string& path) {
  const json* v = field(obj, key);
  if (!v) return nullptr;
  if (!v->is_object()) bad_field(path + "." + key, "an object");
  return v;
}

std::string esc(std::string_view s) { return xml_escape(s); }

std::string size_text(std::uint64_t bytes) { return esc(format_size(bytes)); }

std::string signed_size_text(std::int64_t bytes) {
  if (bytes == 0) return "0";
  const auto mag =
      bytes < 0 ? static_cast<std::uint64_t>(-(bytes + 1)) + 1 : static_cast<std::uint64_t>(bytes);
  return (bytes < 0 ? "&minus;" : "+") + size_text(mag);
}

// Escaped, with break opportunities after ',' and '=' (settings are long words).
std::string breakable(std::string_view s) {
  std::string out;
  for (const char c : s) {
    out += esc(std::string_view(&c, 1));
    if (c == ',' || c == '=') out += "<wbr>";
  }
  return out;
}

std::string count_text(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// --- the embedded data: deduplicated strings, frames and stacks; columnar traces ---

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

struct device_info {
  int device = 0;
  std::size_t entries = 0;
  std::size_t segments = 0;
  std::uint64_t reserved = 0;  // sum of segment sizes in the final state
  std::uint64_t active = 0;    // requested bytes of live blocks in the final state
  std::size_t ooms = 0;
  std::optional<std::int64_t> t_first, t_last;
  const json* analysis = nullptr;
  std::string path;  // of its analysis object
};

std::string time_span_text(std::int64_t us) {
  if (us < 1000) return fmt::format("{} &micro;s", us);
  if (us < 1'000'000) return fmt::format("{:.1f} ms", static_cast<double>(us) / 1e3);
  return fmt::format("{:.2f} s", static_cast<double>(us) / 1e6);
}

void card(std::ostream& out, std::string_view label, const std::string& value_html,
          const std::string& note_html = {}, std::string_view key = {}) {
  out << "<div class=\"stat\"" << (key.empty() ? "" : fmt::format(" data-stat=\"{}\"", key))
      << "><div class=\"stat-label\">" << label << "</div><div class=\"stat-value\">" << value_html
      << "</div>";
  if (!note_html.empty()) out << "<div class=\"stat-note\">" << note_html << "</div>";
  out << "</div>";
}

void frames_html(std::ostream& out, const json& frames, const std::string& path) {
  if (!frames.is_array() || frames.empty()) return;
  out << "<details class=\"frames\"><summary>stack (" << frames.size() << " frames)</summary><pre>";
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const json& f = frames[i];
    if (f.is_array() && f.size() >= 3 && f[0].is_string() && f[2].is_string()) {
      out << esc(f[0].get<std::string>()) << ':' << (f[1].is_number() ? f[1].dump() : "?") << "  "
          << esc(f[2].get<std::string>()) << '\n';
    } else if (f.is_object()) {
      out << esc(opt_string(f, "filename", path).value_or("?")) << ':'
          << opt_int(f, "line", path).value_or(0) << "  "
          << esc(opt_string(f, "name", path).value_or("?")) << '\n';
    } else {
      bad_field(fmt::format("{}.frames[{}]", path, i), "[file, line, function]");
    }
  }
  out << "</pre></details>";
}

void callsites_table(std::ostream& out, const json& sites, const std::string& path,
                     std::string_view id) {
  out << "<table class=\"sites\" id=\"" << id << "\"><thead><tr><th>call site</th><th>module</th>"
      << "<th>category</th><th class=\"num\">bytes</th><th "
         "class=\"num\">tensors</th></tr></thead><tbody>";
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const std::string sp = fmt::format("{}[{}]", path, i);
    const json& s = sites[i];
    if (!s.is_object()) bad_field(sp, "an object");
    out << "<tr><td class=\"site\"><code>" << esc(opt_string(s, "site", sp).value_or("?"))
        << "</code>";
    frames_html(out, opt_array(s, "frames", sp), sp);
    out << "</td><td>" << esc(opt_string(s, "module", sp).value_or("")) << "</td><td>"
        << esc(opt_string(s, "category", sp).value_or("")) << "</td><td class=\"num\">"
        << size_text(opt_bytes(s, "bytes", sp).value_or(0)) << "</td><td class=\"num\">"
        << count_text(opt_bytes(s, "count", sp).value_or(0)) << "</td></tr>";
  }
  out << "</tbody></table>";
}

std::string oom_class_text(std::string_view c) {
  if (c == "not_fragmentation") return "not fragmentation: the live tensors did not fit";
  if (c == "fragmentation") return "fragmentation: enough memory was free, but not in one piece";
  if (c == "pending_frees") return "pending frees: memory waited for other streams";
  if (c == "caching")
    return "caching: memory cached in free segments of another pool or size class";
  return esc(c);
}

void write_recommendation(std::ostream& out, const device_info& d) {
  const json& dev = *d.analysis;
  const std::string& p = d.path;
  const std::string id = fmt::format("device-{}-recommendation", d.device);
  const json* rec = opt_object(dev, "recommendation", p);
  const bool comparable = opt_bool(dev, "comparable", p).value_or(true);
  if (rec) {
    const std::string rp = p + ".recommendation";
    out << "<section class=\"card recommendation\" id=\"" << id
        << "\"><div class=\"card-head\"><div class=\"rec-head\"><span "
           "class=\"eyebrow\">Recommendation</span>"
        << "<h2 class=\"rec-title\">" << esc(opt_string(*rec, "title", rp).value_or(""))
        << "</h2></div>";
    if (const auto saving = opt_int(*rec, "saving", rp)) {
      out << "<span class=\"pill " << (*saving > 0 ? "good" : "neutral") << "\">"
          << (*saving > 0 ? "saves " + size_text(static_cast<std::uint64_t>(*saving))
                          : signed_size_text(*saving))
          << " of peak reserved</span>";
    }
    out << "</div>";
    const json& steps = opt_array(*rec, "steps", rp);
    if (!steps.empty()) out << "<ol class=\"steps\">";
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const std::string sp = fmt::format("{}.steps[{}]", rp, i);
      if (!steps[i].is_object()) bad_field(sp, "an object");
      const std::string kind = opt_string(steps[i], "kind", sp).value_or("shell");
      out << "<li><div class=\"code\" data-kind=\"" << esc(kind) << "\"><span class=\"code-kind\">"
          << esc(kind) << "</span><button type=\"button\" class=\"copy\">Copy</button><pre><code>"
          << esc(opt_string(steps[i], "text", sp).value_or("")) << "</code></pre></div></li>";
    }
    if (!steps.empty()) out << "</ol>";
    const json& costs = opt_array(*rec, "costs", rp);
    if (!costs.empty()) {
      out << "<h3>What it costs</h3><ul class=\"costs\">";
      for (std::size_t i = 0; i < costs.size(); ++i) {
        if (!costs[i].is_string()) bad_field(fmt::format("{}.costs[{}]", rp, i), "a string");
        out << "<li>" << esc(costs[i].get<std::string>()) << "</li>";
      }
      out << "</ul>";
    }
    const json& notes = opt_array(*rec, "notes", rp);
    if (!notes.empty()) {
      out << "<ul class=\"notes\">";
      for (std::size_t i = 0; i < notes.size(); ++i) {
        if (!notes[i].is_string()) bad_field(fmt::format("{}.notes[{}]", rp, i), "a string");
        out << "<li>" << esc(notes[i].get<std::string>()) << "</li>";
      }
      out << "</ul>";
    }
    out << "</section>";
  } else if (!comparable) {
    out << "<section class=\"card notice\" id=\"device-" << d.device
        << "-not-comparable\"><h2>No recommendation: the replay is not comparable</h2>";
    if (const auto why = opt_string(dev, "not_comparable_why", p))
      out << "<p class=\"why\">" << esc(*why) << "</p>";
    if (const auto instead = opt_string(dev, "record_instead", p)) {
      out << "<h3>Record this instead</h3><div class=\"code\" data-kind=\"text\"><button "
             "type=\"button\" class=\"copy\">Copy</button><pre><code>"
          << esc(*instead) << "</code></pre></div>";
    }
    out << "</section>";
  } else if (const json& modes = opt_array(dev, "modes", p); !modes.empty()) {
    // Why there is none, from the candidates: all of them run out of memory, or none saves.
    bool all_oom = true, any = false, any_saving = false;
    for (std::size_t m = 0; m < modes.size(); ++m) {
      const std::string mp = fmt::format("{}.modes[{}]", p, m);
      const json& cands = opt_array(modes[m], "candidates", mp);
      for (std::size_t c = 0; c < cands.size(); ++c) {
        const std::string cp = fmt::format("{}.candidates[{}]", mp, c);
        any = true;
        all_oom = all_oom && opt_bool(cands[c], "oom", cp).value_or(false);
        any_saving = any_saving || opt_int(cands[c], "saving", cp).value_or(0) > 0;
      }
    }
    out << "<section class=\"card notice quiet\" id=\"" << id << "\"><h2>No recommendation</h2><p>";
    if (const auto verdict = opt_string(dev, "verdict", p); verdict && !verdict->empty()) {
      out << esc(*verdict);
    } else if (any && all_oom) {
      out << "Every candidate runs out of memory at this device's budget as the recording did: no "
             "allocator "
             "setting fixes this. The explanation below says where the memory went.";
    } else if (!any_saving) {
      out << "None of the candidates lowers the peak reserved memory of the recorded run.";
    } else {
      out << "The analysis recommends no change for this device.";
    }
    out << "</p></section>";
  }
}

void write_candidates(std::ostream& out, const device_info& d) {
  const json& dev = *d.analysis;
  const json& modes = opt_array(dev, "modes", d.path);
  if (modes.empty()) return;
  out << "<div class=\"modes\" id=\"device-" << d.device << "-modes\" role=\"tablist\">";
  for (std::size_t m = 0; m < modes.size(); ++m) {
    const std::string mp = fmt::format("{}.modes[{}]", d.path, m);
    out << "<button type=\"button\" class=\"mode" << (m == 0 ? " active" : "") << "\" data-mode=\""
        << m << "\"><span class=\"mode-name\">"
        << esc(opt_string(modes[m], "mode", mp).value_or("")) << "</span> "
        << esc(opt_string(modes[m], "label", mp).value_or("")) << "</button>";
  }
  out << "</div>";
  for (std::size_t m = 0; m < modes.size(); ++m) {
    const json& mode = modes[m];
    const std::string mp = fmt::format("{}.modes[{}]", d.path, m);
    const auto best = opt_int(mode, "best", mp);
    const auto best_pt = opt_int(mode, "best_pytorch", mp);
    out << "<div class=\"mode-panel\" data-mode=\"" << m << "\"" << (m == 0 ? "" : " hidden")
        << ">";
    // The label is on the mode's button; the facts it may not say go here.
    const auto start = opt_bytes(mode, "start_reserved", mp);
    const auto live = opt_bytes(mode, "start_live", mp);
    const auto base = opt_bytes(mode, "baseline_peak_reserved", mp);
    if (start || live || base) {
      out << "<p class=\"mode-label\">";
      if (start) {
        out << "Starts with " << size_text(*start) << " reserved";
      } else if (live) {
        out << "Starts with the " << size_text(*live) << " live, laid out by each setting";
      }
      if ((start || live) && base) out << " &middot; ";
      if (base) out << (start ? "the" : "The") << " recorded settings peak at " << size_text(*base);
      out << ".</p>";
    }
    out << "<table class=\"candidates\" id=\"device-" << d.device << "-mode-" << m
        << "-candidates\"><thead><tr><th class=\"show\">plot</th><th>candidate</th>"
        << "<th>setting</th><th class=\"num\">peak reserved</th><th class=\"num\">saving</th>"
        << "<th class=\"num\">peak allocated</th><th class=\"num\">reserved / allocated</th>"
        << "<th class=\"num\">cudaMallocs</th><th>OOM</th></tr></thead><tbody>";
    const json& cands = opt_array(mode, "candidates", mp);
    for (std::size_t c = 0; c < cands.size(); ++c) {
      const json& cand = cands[c];
      const std::string cp = fmt::format("{}.candidates[{}]", mp, c);
      const bool recorded = opt_bool(cand, "recorded", cp).value_or(false);
      const bool is_best = best && *best == static_cast<std::int64_t>(c);
      const bool is_best_pt = best_pt && *best_pt == static_cast<std::int64_t>(c);
      const auto bytes_cell = [&](const char* key) {
        const auto v = opt_bytes(cand, key, cp);
        return v ? size_text(*v) : std::string("&ndash;");
      };
      // Plotted by default: the recorded settings, the best ones and the first two.
      const bool plotted = recorded || is_best || is_best_pt || c < 2;
      out << "<tr data-candidate=\"" << c << "\"" << (is_best ? " class=\"best\"" : "")
          << "><td class=\"show\"><label class=\"swatch-toggle\"><input type=\"checkbox\" "
             "data-mode=\""
          << m << "\" data-candidate=\"" << c << "\"" << (plotted ? " checked" : "")
          << "><span class=\"swatch\" data-candidate=\"" << c << "\"></span></label></td><td>"
          << esc(opt_string(cand, "label", cp).value_or(fmt::format("candidate {}", c)));
      if (recorded) out << " <span class=\"tag\">recorded settings</span>";
      if (is_best) out << " <span class=\"tag good\">best</span>";
      if (is_best_pt && !is_best) out << " <span class=\"tag\">best PyTorch</span>";
      if (opt_string(cand, "policy", cp).value_or("") == "keel") {
        out << " <span class=\"tag keel\">keel policy</span>";
      }
      if (const auto frac = opt_number(cand, "memory_fraction", cp)) {
        out << " <span class=\"tag\">memory fraction " << fmt::format("{:g}", *frac) << "</span>";
      }
      // The setting as it is set: the environment line when the analysis gives one.
      const auto env = opt_string(cand, "env", cp);
      const std::string conf = opt_string(cand, "conf", cp).value_or("");
      out << "</td><td class=\"setting\"><code>"
          << (env            ? breakable(*env)
              : conf.empty() ? std::string("(defaults)")
                             : breakable(conf))
          << "</code>" << (conf.empty() && env ? " <span class=\"muted\">(defaults)</span>" : "")
          << "</td>";
      out << "<td class=\"num\">" << bytes_cell("peak_reserved") << "</td>";
      const auto saving = opt_int(cand, "saving", cp);
      out << "<td class=\"num"
          << (saving && *saving > 0   ? " good"
              : saving && *saving < 0 ? " bad"
                                      : "")
          << "\">" << (saving ? signed_size_text(*saving) : "&ndash;") << "</td>";
      out << "<td class=\"num\">" << bytes_cell("peak_allocated") << "</td>";
      const auto frag = opt_number(cand, "fragmentation", cp);
      out << "<td class=\"num\">" << (frag ? fmt::format("{:.3f}", *frag) : "&ndash;") << "</td>";
      const auto mallocs = opt_int(cand, "device_mallocs", cp);
      out << "<td class=\"num\">"
          << (mallocs ? count_text(static_cast<std::uint64_t>(std::max<std::int64_t>(0, *mallocs)))
                      : "&ndash;")
          << "</td><td>";
      if (opt_bool(cand, "oom", cp).value_or(false)) {
        const auto at = opt_int(cand, "oom_entry", cp);
        out << "<span class=\"tag bad\">OOM" << (at ? fmt::format(" at entry {}", *at) : "")
            << "</span>";
      } else {
        out << "no";
      }
      out << "</td></tr>";
    }
    out << "</tbody></table></div>";
  }
}

void write_oom(std::ostream& out, const device_info& d) {
  const json* oom = opt_object(*d.analysis, "oom", d.path);
  if (!oom || !opt_bool(*oom, "found", d.path + ".oom").value_or(true)) return;
  const std::string op = d.path + ".oom";
  out << "<section class=\"card explain\" id=\"device-" << d.device
      << "-oom\"><div class=\"card-head\"><h2>Out of memory, explained</h2>";
  if (const auto cls = opt_string(*oom, "class", op)) {
    out << "<span class=\"pill bad\" data-oom-class=\"" << esc(*cls) << "\">" << esc(*cls)
        << "</span>";
  }
  out << "</div>";
  out << "<p class=\"oom-where\">";
  const bool recorded = opt_bool(*oom, "recorded", op).value_or(false);
  out << (recorded ? "The recording ran out of memory"
                   : "A replay on the budget runs out of memory");
  if (const auto entry = opt_int(*oom, "entry", op)) {
    out << " at <a href=\"#\" class=\"goto-entry\" data-entry=\"" << *entry << "\">entry " << *entry
        << "</a>";
  }
  if (const auto req = opt_bytes(*oom, "request", op)) out << ", asking for " << size_text(*req);
  out << ".</p>";
  if (const auto cls = opt_string(*oom, "class", op))
    out << "<p class=\"oom-class\">" << oom_class_text(*cls) << "</p>";
  if (const auto text = opt_string(*oom, "text", op))
    out << "<p class=\"oom-text\">" << esc(*text) << "</p>";
  out << "<div class=\"stats compact\">";
  if (const auto v = opt_bytes(*oom, "request", op)) card(out, "request", size_text(*v));
  if (const auto v = opt_bytes(*oom, "budget", op)) card(out, "budget", size_text(*v));
  if (const auto v = opt_bytes(*oom, "live", op)) card(out, "live tensors", size_text(*v));
  if (const auto v = opt_bytes(*oom, "reserved", op)) card(out, "reserved", size_text(*v));
  out << "</div>";
  const json& sites = opt_array(*oom, "top_callsites", op);
  if (!sites.empty()) {
    out << "<h3>Where the live memory came from</h3>";
    callsites_table(out, sites, op + ".top_callsites",
                    fmt::format("device-{}-oom-sites", d.device));
  }
  out << "</section>";
}

void write_device(std::ostream& out, const device_info& d, bool active) {
  const bool has_trace = d.entries > 0;
  out << "<section class=\"device-panel\" id=\"device-" << d.device << "\" data-device=\""
      << d.device << "\" data-entries=\"" << d.entries << "\" data-kind=\""
      << (has_trace ? "trace" : "state") << "\"" << (active ? "" : " hidden") << ">";

  // Key numbers.
  out << "<div class=\"stats\" id=\"device-" << d.device << "-summary\">";
  const json* rec = d.analysis ? opt_object(*d.analysis, "recorded", d.path) : nullptr;
  if (rec && opt_bytes(*rec, "peak_reserved", d.path + ".recorded")) {
    const auto budget = opt_bytes(*rec, "budget", d.path + ".recorded");
    card(out, "peak reserved", size_text(*opt_bytes(*rec, "peak_reserved", d.path + ".recorded")),
         budget ? "recorded, of a " + size_text(*budget) + " budget" : std::string("recorded"),
         "peak-reserved");
  }
  card(out, "reserved at the end", size_text(d.reserved),
       fmt::format("{} segments", count_text(d.segments)), "reserved");
  card(out, "live at the end", size_text(d.active), "requested bytes of live blocks", "live");
  if (has_trace) {
    std::string span;
    if (d.t_first && d.t_last) span = time_span_text(*d.t_last - *d.t_first);
    card(out, "trace entries", count_text(d.entries),
         span.empty() ? "no timestamps" : span + " window", "entries");
  } else {
    card(out, "trace entries", "0", "state only", "entries");
  }
  if (d.ooms > 0) card(out, "OOM events", std::to_string(d.ooms), {}, "ooms");
  if (d.analysis) {
    if (const auto s = opt_string(*d.analysis, "settings", d.path)) {
      card(out, "allocator settings", s->empty() ? "defaults" : "<code>" + esc(*s) + "</code>", {},
           "settings");
    }
  }
  out << "</div>";

  if (d.analysis) {
    if (const json* fid = opt_object(*d.analysis, "fidelity", d.path)) {
      if (const auto line = opt_string(*fid, "line", d.path + ".fidelity")) {
        const bool exact = opt_bool(*fid, "exact", d.path + ".fidelity").value_or(false);
        out << "<p class=\"fidelity " << (exact ? "exact" : "inexact") << "\" id=\"device-"
            << d.device
            << "-fidelity\"><span class=\"dot\"></span><strong>Replay fidelity:</strong> "
            << esc(*line) << "</p>";
      }
    }
    write_recommendation(out, d);
  }

  if (has_trace) {
    out << "<section class=\"card\" id=\"device-" << d.device
        << "-timeline\"><div class=\"card-head\"><h2>Active memory timeline</h2>"
        << "<div class=\"toolbar\"><label>x axis <select class=\"axis-select\"><option "
           "value=\"time\">time</option>"
        << "<option value=\"entry\">trace entry</option></select></label>"
        << "<label>colour <select class=\"color-select\"><option value=\"site\">call site</option>"
        << "<option value=\"category\">category</option></select></label>"
        << "<button type=\"button\" class=\"zoom-reset\">Reset zoom</button></div></div>"
        << "<p class=\"hint\">One band per allocation, stacked in allocation order; the lighter "
           "ones "
           "at the bottom were live before the trace window. Hover: call stack &middot; wheel: "
           "zoom "
           "&middot; drag: zoom to a range &middot; click: the allocator state at that moment.</p>"
        << "<div class=\"chart\" data-chart=\"active\"><canvas class=\"plot\"></canvas><div "
           "class=\"tooltip\" hidden></div></div>"
        << "<div class=\"overview\" data-chart=\"overview\"><canvas></canvas></div>"
        << "<div class=\"color-key\"></div>"
        << "<p class=\"range-info\" id=\"device-" << d.device << "-range\"></p>"
        << "<div class=\"stack-panel\" id=\"device-" << d.device
        << "-hover\"><div class=\"stack-head\"><span class=\"stack-title\">Hover an allocation to "
           "see where it was made.</span>"
        << "<label class=\"muted\"><input type=\"checkbox\" class=\"show-native\"> native "
           "frames</label></div><pre class=\"stack-frames\"></pre></div>"
        << "</section>";

    out << "<section class=\"card\" id=\"device-" << d.device
        << "-candidates\"><div class=\"card-head\"><h2>Recorded run and candidates</h2>"
        << "<div class=\"toolbar\"><label><input type=\"checkbox\" class=\"show-allocated\" "
           "checked> allocated</label>"
        << "<label><input type=\"checkbox\" class=\"show-reserved\" checked> "
           "reserved</label></div></div>"
        << "<p class=\"hint\">Solid: reserved (segments held from the driver); dashed: allocated "
           "(requested bytes live). "
           "The wide grey band: the recording itself. Each pixel column shows the maxima of its "
           "entries.</p>"
        << "<div class=\"chart\" data-chart=\"lines\"><canvas class=\"plot\"></canvas><div "
           "class=\"tooltip\" hidden></div></div>"
        << "<div class=\"legend\" id=\"device-" << d.device << "-legend\"></div>";
    if (d.analysis) {
      write_candidates(out, d);
    } else {
      out << "<p class=\"muted\">No analysis for this device: only the recorded run is shown.</p>";
    }
    out << "</section>";
  } else {
    out << "<section class=\"card notice quiet\" id=\"device-" << d.device
        << "-state-only\"><h2>State only</h2>"
        << "<p>This snapshot holds the allocator's state but no trace entries for this device, so "
           "there is no timeline. "
           "Record one with "
           "<code>torch.cuda.memory._record_memory_history(max_entries=100000)</code> before the "
           "code of interest and dump it with "
           "<code>torch.cuda.memory._dump_snapshot(\"snapshot.pickle\")</code>.</p>";
    if (d.analysis) write_candidates(out, d);
    out << "</section>";
  }

  out << "<section class=\"card\" id=\"device-" << d.device
      << "-state\"><div class=\"card-head\"><h2>Allocator state</h2>";
  if (has_trace) {
    out << "<div class=\"toolbar event-nav\"><button type=\"button\" class=\"ev-prev\" "
           "title=\"previous event (&larr;)\">&larr;</button>"
        << "<label>event <input type=\"number\" class=\"ev-index\" min=\"-1\" max=\""
        << d.entries - 1 << "\" value=\"" << d.entries - 1
        << "\"></label><button type=\"button\" class=\"ev-next\" title=\"next event "
           "(&rarr;)\">&rarr;</button>"
        << "<button type=\"button\" class=\"ev-peak\">peak</button><button type=\"button\" "
           "class=\"ev-end\">end</button>";
    if (d.ooms > 0) out << "<button type=\"button\" class=\"ev-oom bad\">OOM</button>";
    out << "</div>";
  } else {
    out << "<div class=\"toolbar\"><label>colour <select class=\"color-select\"><option "
           "value=\"site\">call site"
           "</option><option value=\"category\">category</option></select></label></div>";
  }
  out << "</div><p class=\"event-desc\" id=\"device-" << d.device << "-event\"></p>"
      << "<div class=\"stats compact state-stats\"></div>"
      << (has_trace ? "" : "<div class=\"color-key\"></div>")
      << "<div class=\"chart segmap\" data-chart=\"segments\"><canvas class=\"plot\"></canvas><div "
         "class=\"tooltip\" hidden></div></div>"
      << "<div class=\"seg-legend\"><span><i class=\"sw alloc\"></i>live block (colour: call "
         "site)</span><span><i class=\"sw pending\"></i>freed, waiting for another stream</span>"
      << "<span><i class=\"sw round\"></i>rounding inside a block</span><span><i class=\"sw "
         "free\"></i>free in the segment</span></div>"
      << "<div class=\"two-col\"><div><h3>Segment</h3><div class=\"segment-detail\" id=\"device-"
      << d.device
      << "-segment\"><p class=\"muted\">Click a segment to list its blocks.</p></div></div>"
      << "<div><h3>Call sites of the live memory</h3><div class=\"state-sites\" id=\"device-"
      << d.device << "-state-sites\"></div></div></div>"
      << "</section>";

  if (d.analysis) {
    write_oom(out, d);
    const json& sites = opt_array(*d.analysis, "callsites_at_peak", d.path);
    if (!sites.empty()) {
      out << "<section class=\"card\" id=\"device-" << d.device
          << "-callsites\"><h2>Call sites at the peak</h2>";
      callsites_table(out, sites, d.path + ".callsites_at_peak",
                      fmt::format("device-{}-peak-sites", d.device));
      out << "</section>";
    }
  }
  out << "</section>";
}

}  // namespace

void write_html_report(std::ostream& out, const snapshot& snap, const nlohmann::json& analysis,
                       const report_options& options) {
  if (!analysis.is_null() && !analysis.is_object()) bad_field("(document)", "an object or null");
  if (const auto schema = opt_string(analysis, "schema", "")) {
    if (*schema != k_analysis_schema) {
      throw invalid_argument(
          fmt::format("analysis schema '{}' is not {}", *schema, k_analysis_schema));
    }
  }

  // Every device with data, ascending.
  std::map<int, device_info> devices;
  for (std::size_t i = 0; i < snap.device_traces.size(); ++i) {
    const auto& trace = snap.device_traces[i];
    if (trace.empty()) continue;
    device_info& d = devices[static_cast<int>(i)];
    d.device = static_cast<int>(i);
    d.entries = trace.size();
    for (const trace_entry& e : trace) {
      d.ooms += e.action == trace_action::oom;
      if (e.time_us) {
        if (!d.t_first) d.t_first = e.time_us;
        d.t_last = e.time_us;
      }
    }
  }
  for (const snapshot_segment& seg : snap.segments) {
    device_info& d = devices[seg.device];
    d.device = seg.device;
    ++d.segments;
    d.reserved += seg.total_size;
    for (const snapshot_block& b : seg.blocks) {
      if (b.state != block_state::inactive)
        d.active += b.requested_size ? b.requested_size : b.size;
    }
  }
  const json& adevs = opt_array(analysis, "devices", "");
  for (std::size_t i = 0; i < adevs.size(); ++i) {
    const std::string path = fmt::format("devices[{}]", i);
    if (!adevs[i].is_object()) bad_field(path, "an object");
    const auto dev = opt_int(adevs[i], "device", path);
    if (!dev) bad_field(path + ".device", "the device index");
    device_info& d = devices[static_cast<int>(*dev)];
    d.device = static_cast<int>(*dev);
    d.analysis = &adevs[i];
    d.path = path;
  }

  std::string name = options.trace_name;
  if (name.empty()) name = opt_string(analysis, "trace", "").value_or("snapshot");

  // The embedded data.
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

  // The device shown first: the one with most trace entries, then the lowest index.
  int first = devices.empty() ? 0 : devices.begin()->first;
  std::size_t most = 0;
  for (const auto& [dev, d] : devices) {
    if (d.entries > most) most = d.entries, first = dev;
  }

  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      << "<meta name=\"generator\" content=\"keel " << esc(k_analysis_schema) << "\">"
      << "<title>" << esc(name) << " &middot; keel memory report</title><style>"
      << report_assets::k_style << "</style></head><body>\n";
  out << "<header id=\"report-header\"><div class=\"brand\"><span class=\"logo\">keel</span> "
         "memory report</div>"
      << "<h1 id=\"report-title\">" << esc(name) << "</h1><div class=\"header-meta\">"
      << devices.size() << (devices.size() == 1 ? " device" : " devices");
  if (snap.settings) {
    out << " &middot; recorded with <code>"
        << (snap.settings->conf.empty() ? "default settings" : esc(snap.settings->conf))
        << "</code>";
  }
  out << "<span class=\"render-time\" id=\"render-time\"></span></div></header>\n";

  out << "<nav id=\"device-tabs\" role=\"tablist\">";
  for (const auto& [dev, d] : devices) {
    out << "<button type=\"button\" role=\"tab\" class=\"tab" << (dev == first ? " active" : "")
        << "\" id=\"tab-device-" << dev << "\" data-device=\"" << dev
        << "\"><span class=\"tab-name\">cuda:" << dev << "</span><span class=\"tab-sub\">"
        << (d.entries ? count_text(d.entries) + " events" : std::string("state only"))
        << " &middot; " << size_text(d.reserved) << "</span>"
        << (d.ooms ? "<span class=\"tab-oom\">OOM</span>" : "") << "</button>";
  }
  out << "</nav>\n<main id=\"report\">";
  if (devices.empty()) {
    out << "<section class=\"card notice\" id=\"empty\"><h2>Nothing to show</h2><p>The snapshot "
           "holds no segments and no trace entries.</p></section>";
  }
  for (const auto& [dev, d] : devices) write_device(out, d, dev == first);
  out << "</main>\n<footer id=\"report-footer\">Written by keel from a PyTorch CUDA memory "
         "snapshot. "
      << "Self-contained: nothing is loaded from the network. Sizes in binary units (1 GiB = "
         "2<sup>30</sup> bytes).</footer>\n";
  out << "<script type=\"application/json\" id=\"keel-report-data\">"
      << script_safe(data.dump(-1, ' ', false, json::error_handler_t::replace)) << "</script>\n";
  out << "<script>" << report_assets::k_script << "</script>\n</body></html>\n";
  if (!out) throw io_error("writing the HTML report failed");
}

void write_html_report(const std::string& path, const snapshot& snap,
                       const nlohmann::json& analysis, const report_options& options) {
  // The page is made first, so a malformed analysis leaves no half-written file behind.
  std::ostringstream page;
  write_html_report(page, snap, analysis, options);
  write_output_file(path, page.view());
}

}  // namespace keel::memory
