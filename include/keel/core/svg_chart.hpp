// keel::svg::chart — the one SVG chart writer every report uses (perf's roofline, kv's sweep).
//
// A chart is a plot area with two axes (linear or log10), grid lines at the axes' ticks, a title,
// axis labels, data series (a polyline, markers, or both; each may have a legend entry) and
// labelled reference lines. render() writes plain SVG 1.1: no scripts, no external resources,
// every text escaped, so it is safe to open from an untrusted run. Coordinates outside an axis
// range are drawn where they fall (callers choose ranges that hold their data); points whose
// coordinates are not finite, or not positive on a log axis, are skipped. Pure; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace keel::svg {

enum class scale { linear, log };

struct axis {
  std::string label;
  scale kind = scale::linear;
  double lo = 0, hi = 1;                 // lo < hi; both > 0 on a log axis
  std::vector<double> ticks;             // grid lines, labelled with tick_labels (or si_label)
  std::vector<std::string> tick_labels;  // empty: si_label of each tick
};

// Decades covering [lo, hi] (lo, hi > 0): the rounded-out range and a tick at each power of 10.
axis log_decades(std::string label, double lo, double hi);

struct series {
  std::string name;                               // legend text; empty: no legend entry
  std::string color;                              // any SVG colour, e.g. "#1f77b4"
  std::vector<std::pair<double, double>> points;  // drawn in this order
  bool line = true;
  bool markers = true;
  std::string dash;                       // stroke-dasharray of the line, e.g. "2,3"; empty: solid
  std::vector<std::string> point_titles;  // hover text per marker (empty or one per point)
};

// A horizontal line across the plot at y, with a label to the right of the plot.
struct reference_line {
  double y = 0;
  std::string label;
  std::string color = "#555";
  std::string dash = "6,4";
};

// Free text at a data coordinate (offset by dx/dy pixels).
struct note {
  double x = 0, y = 0;
  std::string text;
  std::string color = "#000";
  double dx = 4, dy = -6;
};

struct chart {
  std::string title;
  double width = 760, height = 480;
  double left = 70, right = 130, top = 50, bottom = 60;  // margins; the legend sits on the right
  double font_size = 12;
  bool frame = false;  // a rectangle around the plot area
  axis x, y;
  std::vector<series> data;
  std::vector<reference_line> references;
  std::vector<note> notes;
};

// The chart as an SVG document. Throws keel::invalid_argument for an empty or (on a log axis)
// non-positive axis range.
std::string render(const chart& c);

// A short axis label: 1500 -> "1.5K", 2e12 -> "2T", 499712 -> "500K" (SI prefixes up to E,
// three significant digits).
std::string si_label(double v);

}  // namespace keel::svg
