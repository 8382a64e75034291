// report_html — one self-contained HTML page about a memory snapshot and keel's analysis of it.
//
// The page is what a pytorch.org/memory_viz user expects, plus keel's answers: per device (one
// tab each: every device of analysis.devices and every device of the snapshot with segments or
// trace entries) the active-memory timeline per allocation (stacked, stack trace on hover,
// allocations live before the trace window at the bottom), a time axis (time_us, or the entry
// index when the trace has no times) with wheel and drag zoom and an overview to select a range,
// the allocator state (segments and their blocks by address) at any selected event, computed
// from the recording by walking the trace back from the final state, OOM events marked and
// selectable, the recorded run and every candidate of the analysis as allocated/reserved lines
// (per-pixel maxima of both, so reserved never dips below allocated), the candidates table,
// the recommended recipe with copyable steps, and the OOM explanation with its call sites.
// A snapshot without trace entries gets the segment map of its state and its call sites.
//
// The page needs no network: the script and style are compiled into the library (their
// sources are src/memory/analysis/report/report.js and report.css) and the data is embedded
// as one JSON document (`<script type="application/json" id="keel-report-data">`) in a compact
// columnar form: per device the trace as parallel arrays (action, address, size, stream, time,
// stack), addresses relative to one base, and every call stack an index into a table of distinct
// stacks, whose frames index a table of distinct frames and strings. Everything that comes from
// the snapshot or the analysis is untrusted: in HTML it is escaped with keel::xml_escape, in the
// embedded JSON every '<', '>' and '&' is written as a \u escape, so no name can close the
// script element; the script only ever places text with textContent.
//
// `analysis` is a keel.mem.analysis/1 document (keel's analysis layer) or null / an empty
// object for a page of the snapshot alone. Absent or null optional fields are tolerated; a
// field of the wrong type, or a different schema, is an invalid_argument naming the field.
// Pure function of its inputs; thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <iosfwd>
#include <string>

#include "keel/memory/snapshot.hpp"

namespace keel::memory {

struct report_options {
  // Shown in the title and header. Empty: the analysis's "trace", else "snapshot".
  std::string trace_name;
  // A candidate timeline longer than this is reduced to this many buckets of consecutive
  // entries, each holding the maximum allocated and the maximum reserved bytes of its points.
  std::size_t max_timeline_points = 4096;
  // Frames kept per call stack (innermost first); deeper frames are cut. 0: keep all.
  std::size_t max_frames_per_stack = 96;
};

// The analysis schema this page reads.
inline constexpr const char* k_analysis_schema = "keel.mem.analysis/1";

// Writes the page. Throws keel::invalid_argument for a malformed analysis (see above) and
// keel::io_error when the stream fails.
void write_html_report(std::ostream& out, const snapshot& snap, const nlohmann::json& analysis,
                       const report_options& options = {});

// Writes the page to a file. Throws keel::io_error when the file cannot be written, and
// invalid_argument as above.
void write_html_report(const std::string& path, const snapshot& snap,
                       const nlohmann::json& analysis, const report_options& options = {});

}  // namespace keel::memory
