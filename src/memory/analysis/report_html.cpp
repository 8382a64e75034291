// The HTML report: the page around the device sections (report_sections.cpp) and the embedded
// data (report_data.cpp) that report/report.js draws from. See
// include/keel/memory/report_html.hpp.
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

#include "report_html_parts.hpp"

namespace keel::memory {

// Defined in the generated report_assets.cpp (src/memory/analysis/report/embed.cmake).
namespace report_assets {
extern const char* const k_script;
extern const char* const k_style;
}  // namespace report_assets

using namespace report_detail;

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

  const json data = embedded_data(snap, devices, name, options);

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
