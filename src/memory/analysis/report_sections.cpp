// The static HTML sections of one device of the report: recommendation, candidates, OOM.

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

}  // namespace

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

}  // namespace keel::memory::report_detail
