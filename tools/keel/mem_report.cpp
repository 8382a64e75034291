#include "mem_report.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <ostream>

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"
#include "keel/core/xml_escape.hpp"

namespace keel::cli {

using namespace keel::memory;

int pick_device(const snapshot& s, std::optional<int> requested, const std::string& path) {
  const std::vector<int> devices = devices_in(s);
  if (devices.empty()) throw invalid_argument(fmt::format("{}: the snapshot holds no segments and no trace", path));
  if (requested) {
    if (std::find(devices.begin(), devices.end(), *requested) == devices.end()) {
      throw invalid_argument(fmt::format("{}: --device {} has no data; devices with data: {}", path,
                                         *requested, fmt::join(devices, ", ")));
    }
    return *requested;
  }
  // The device with most allocator events, then most segments.
  const auto score = [&](int dev) {
    std::size_t events = 0;
    if (static_cast<std::size_t>(dev) < s.device_traces.size()) {
      for (const trace_entry& e : s.device_traces[static_cast<std::size_t>(dev)]) {
        events += e.action != trace_action::snapshot && e.action != trace_action::annotate;
      }
    }
    const auto segments = static_cast<std::size_t>(std::count_if(
        s.segments.begin(), s.segments.end(), [&](const snapshot_segment& g) { return g.device == dev; }));
    return std::pair{events, segments};
  };
  return *std::max_element(devices.begin(), devices.end(),
                           [&](int a, int b) { return score(a) < score(b); });
}

nlohmann::json replay_to_json(const replay_result& r, const trace_model& model) {
  nlohmann::json j;
  j["policy"] = std::string(to_string(r.policy));
  j["conf"] = r.conf;
  j["device"] = r.device;
  j["start"] = std::string(to_string(r.start));
  j["events"] = r.events;
  j["ops"] = r.ops;
  j["peak_allocated"] = r.peak_allocated;
  j["peak_reserved"] = r.peak_reserved;
  j["fragmentation"] = r.fragmentation;
  j["at_peak"] = {{"requested", r.requested_at_peak},
                  {"internal", r.internal_at_peak},
                  {"external", r.external_at_peak}};
  j["device_mallocs"] = r.device_mallocs;
  j["retries"] = r.retries;
  j["ooms"] = nlohmann::json::array();
  for (const replay_oom& o : r.ooms) {
    j["ooms"].push_back({{"entry", o.entry}, {"size", o.size}, {"message", o.message}});
  }
  if (r.fidelity) {
    const fidelity_report& f = *r.fidelity;
    nlohmann::json mismatch = nullptr;
    if (f.first_mismatch) {
      mismatch = {{"index", f.first_mismatch->index},
                  {"recorded", f.first_mismatch->recorded ? nlohmann::json(*f.first_mismatch->recorded) : nullptr},
                  {"replayed", f.first_mismatch->replayed ? nlohmann::json(*f.first_mismatch->replayed) : nullptr}};
    }
    j["fidelity"] = {{"recorded_segments", f.recorded_segments},
                     {"replayed_segments", f.replayed_segments},
                     {"matched", f.matched},
                     {"first_mismatch", mismatch}};
  } else {
    j["fidelity"] = nullptr;
  }
  j["start_state"] = {{"segments", model.start.size()},
                      {"reserved", model.start_reserved},
                      {"requested", model.start_requested}};
  j["notes"] = nlohmann::json::array();
  for (const model_note& n : model.notes) {
    j["notes"].push_back({{"text", n.text}, {"example", n.example}, {"count", n.count}});
  }
  j["elapsed_ms"] = r.elapsed_ms;
  return j;
}

void print_replay_text(std::ostream& out, const std::string& trace, const trace_model& model,
                       const replay_result& r) {
  std::size_t allocs = 0, frees = 0, empties = 0;
  for (const replay_op& op : model.ops) {
    allocs += op.kind == op_kind::alloc;
    frees += op.kind == op_kind::free;
    empties += op.kind == op_kind::empty_cache;
  }
  out << fmt::format("trace           {} (device {}): {} events; replayed {} allocs, {} frees, {} empty_cache\n",
                     trace, r.device, r.events, allocs, frees, empties);
  out << fmt::format("policy          {}{}\n", to_string(r.policy),
                     r.conf.empty() ? " (PyTorch's default settings)" : " with " + r.conf);
  out << fmt::format("start           {}: {} segments, {} reserved, {} requested live\n",
                     r.start == start_mode::window ? "the recorded layout" : "the live blocks only",
                     model.start.size(), format_size(model.start_reserved), format_size(model.start_requested));
  out << fmt::format("peak allocated  {} (sum of requested sizes)\n", format_size(r.peak_allocated));
  out << fmt::format("peak reserved   {}\n", format_size(r.peak_reserved));
  out << fmt::format("fragmentation   {:.3f} (peak reserved / peak allocated)\n", r.fragmentation);
  out << fmt::format("at the peak     {} requested, {} rounding inside blocks, {} free in segments\n",
                     format_size(r.requested_at_peak), format_size(r.internal_at_peak),
                     format_size(r.external_at_peak));
  out << fmt::format("device mallocs  {}, retries {}, OOMs {}\n", r.device_mallocs, r.retries, r.ooms.size());
  for (const replay_oom& o : r.ooms) out << fmt::format("  OOM at entry {}: {}\n", o.entry, o.message);
  if (r.fidelity) {
    const fidelity_report& f = *r.fidelity;
    if (!f.first_mismatch) {
      out << fmt::format("fidelity        all {} recorded segment allocations reproduced in order\n",
                         f.recorded_segments);
    } else {
      const auto show = [](const std::optional<std::uint64_t>& v) {
        return v ? format_size_exact(*v) : std::string("nothing");
      };
      out << fmt::format("fidelity        {} of {} recorded segment allocations match; #{}: recorded {}, replayed {}\n",
                         f.matched, f.recorded_segments, f.first_mismatch->index,
                         show(f.first_mismatch->recorded), show(f.first_mismatch->replayed));
    }
  }
  for (const model_note& n : model.notes) {
    out << "note            " << n.text
        << (n.count > 1 ? fmt::format(" ({} times; first {})", n.count, n.example) : fmt::format(" ({})", n.example))
        << '\n';
  }
  out << fmt::format("time            {:.1f} ms\n", r.elapsed_ms);
}

namespace {

constexpr const char* k_colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

std::string timeline_svg(const std::vector<replay_result>& results) {
  const double w = 900, h = 320, left = 70, bottom = 30;
  std::uint64_t ymax = 1;
  std::uint32_t xmax = 1;
  for (const replay_result& r : results) {
    for (const timeline_point& p : r.timeline) {
      ymax = std::max({ymax, p.reserved, p.allocated});
      xmax = std::max(xmax, p.entry);
    }
  }
  const auto x = [&](double e) { return left + e / xmax * (w - left - 10); };
  const auto y = [&](double v) { return h - bottom - v / static_cast<double>(ymax) * (h - bottom - 10); };
  std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", w, h, w, h);
  svg += fmt::format(R"(<rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>)", w, h);
  for (int t = 0; t <= 4; ++t) {
    const double v = static_cast<double>(ymax) * t / 4;
    svg += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#ddd"/><text x="4" y="{:.1f}" font-size="11">{}</text>)",
                       left, w - 10, y(v), y(v), y(v) + 4, xml_escape(format_size(static_cast<std::uint64_t>(v))));
  }
  svg += fmt::format(R"(<text x="{}" y="{}" font-size="11">trace entry</text>)", w / 2, h - 8);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const replay_result& r = results[i];
    const char* color = k_colors[i % 6];
    std::string reserved, allocated;
    for (const timeline_point& p : r.timeline) {
      reserved += fmt::format("{:.1f},{:.1f} ", x(p.entry), y(static_cast<double>(p.reserved)));
      allocated += fmt::format("{:.1f},{:.1f} ", x(p.entry), y(static_cast<double>(p.allocated)));
    }
    svg += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>)", color, reserved);
    if (i == 0) {
      svg += fmt::format(R"(<polyline fill="none" stroke="#000" stroke-dasharray="4 3" stroke-width="1.5" points="{}"/>)", allocated);
    }
  }
  svg += "</svg>";
  return svg;
}

std::string segment_map_svg(const snapshot& s) {
  const double w = 900, row = 14, left = 10;
  std::uint64_t largest = 1;
  for (const snapshot_segment& seg : s.segments) largest = std::max(largest, seg.total_size);
  const double h = row * static_cast<double>(s.segments.size()) + 10;
  std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", w, h, w, h);
  for (std::size_t i = 0; i < s.segments.size(); ++i) {
    const snapshot_segment& seg = s.segments[i];
    const double scale = (w - left - 10) / static_cast<double>(largest);
    double cursor = left;
    for (const snapshot_block& b : seg.blocks) {
      const double bw = std::max(0.5, static_cast<double>(b.size) * scale);
      const char* fill = b.state == block_state::active_allocated ? "#1f77b4"
                         : b.state == block_state::active_pending_free ? "#ff7f0e" : "#e6e6e6";
      svg += fmt::format(R"(<rect x="{:.2f}" y="{:.1f}" width="{:.2f}" height="{}" fill="{}" stroke="#fff" stroke-width="0.3"><title>{} {} at {:#x}</title></rect>)",
                         cursor, 5 + row * static_cast<double>(i), bw, row - 2, fill,
                         xml_escape(std::string(to_string(b.state))), xml_escape(format_size(b.size)), b.address);
      cursor += bw;
    }
  }
  svg += "</svg>";
  return svg;
}

}  // namespace

void write_html_report(const std::string& path, const std::string& trace, const trace_model& model,
                       const std::vector<replay_result>& results) {
  std::ofstream out(path);
  if (!out) throw io_error(fmt::format("{}: cannot write the HTML report", path));
  out << "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>keel mem: "
      << xml_escape(trace) << "</title><style>body{font-family:sans-serif;margin:24px;color:#222}"
      << "table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}"
      << "td:first-child,th:first-child{text-align:left}.sw{display:inline-block;width:12px;height:12px;margin-right:4px}"
      << "</style></head><body>";
  out << "<h1>keel mem: " << xml_escape(trace) << "</h1>";
  out << fmt::format("<p>Device {}: {} trace entries, {} ops replayed. The starting state holds {} segments ({} reserved, {} requested live).</p>",
                     model.device, model.entries, model.ops.size(), model.start.size(),
                     xml_escape(format_size(model.start_reserved)), xml_escape(format_size(model.start_requested)));
  out << "<h2>Reserved memory over time</h2><p>Solid lines: reserved memory per setting; dashed: requested bytes live (the program's own demand).</p>";
  out << timeline_svg(results);
  out << "<table><tr><th>setting</th><th>peak reserved</th><th>peak allocated</th><th>fragmentation</th><th>OOMs</th></tr>";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const replay_result& r = results[i];
    const std::string label = std::string(to_string(r.policy)) + (r.conf.empty() ? " (defaults)" : " " + r.conf);
    out << fmt::format("<tr><td><span class=\"sw\" style=\"background:{}\"></span>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td></tr>",
                       k_colors[i % 6], xml_escape(label), xml_escape(format_size(r.peak_reserved)),
                       xml_escape(format_size(r.peak_allocated)), r.fragmentation, r.ooms.size());
  }
  out << "</table>";
  for (const replay_result& r : results) {
    if (!r.peak_state) continue;
    out << fmt::format("<h2>Segments at the reserved peak ({})</h2><p>Blue: live blocks; orange: waiting for cross-stream frees; grey: free. One row per segment, to scale.</p>",
                       xml_escape(std::string(to_string(r.policy))));
    out << segment_map_svg(*r.peak_state);
    break;
  }
  out << "</body></html>\n";
  if (!out) throw io_error(fmt::format("{}: writing the HTML report failed", path));
}

}  // namespace keel::cli
