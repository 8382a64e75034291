#include "keel/perf/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "keel/core/error.hpp"
#include "keel/core/svg_chart.hpp"

namespace keel::perf {

std::string roofline_svg(const std::string& title, double peak_flops, double bandwidth,
                         const std::vector<svg_point>& points) {
  if (!(peak_flops > 0) || !(bandwidth > 0) || !std::isfinite(peak_flops) ||
      !std::isfinite(bandwidth))
    throw invalid_argument("roofline_svg needs peak and bandwidth");
  const double ridge = peak_flops / bandwidth;
  std::vector<svg_point> kept;
  for (const svg_point& p : points) {
    if (std::isfinite(p.intensity) && std::isfinite(p.flops) && p.intensity > 0 && p.flops > 0)
      kept.push_back(p);
  }
  double x_lo = ridge / 1000, x_hi = ridge * 100, y_lo = peak_flops / 1e5, y_hi = peak_flops * 3;
  for (const svg_point& p : kept) {
    x_lo = std::min(x_lo, p.intensity / 2);
    x_hi = std::max(x_hi, p.intensity * 2);
    y_lo = std::min(y_lo, p.flops / 2);
  }
  svg::chart c;
  c.title = title;
  c.width = 860, c.height = 560, c.left = 80, c.right = 250, c.top = 40, c.bottom = 60;
  c.font_size = 11;
  c.x = svg::log_decades("arithmetic intensity (FLOP/byte)", x_lo, x_hi);
  c.y = svg::log_decades("FLOP/s", y_lo, y_hi);
  // The roof: bandwidth slope up to the ridge, then the flat peak.
  const double x0 = std::max(c.x.lo, c.y.lo / bandwidth);
  svg::series roof;
  roof.color = "#c00";
  roof.points = {{x0, x0 * bandwidth}, {ridge, peak_flops}, {c.x.hi, peak_flops}};
  roof.markers = false;
  c.data.push_back(std::move(roof));
  svg::note roof_label;
  roof_label.x = ridge, roof_label.y = peak_flops, roof_label.color = "#c00";
  roof_label.text = fmt::format("peak {}FLOP/s, {}B/s, ridge {:.3g}", svg::si_label(peak_flops),
                                svg::si_label(bandwidth), ridge);
  c.notes.push_back(std::move(roof_label));
  static const char* const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                       "#8c564b", "#e377c2", "#17becf", "#bcbd22"};
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const svg_point& p = kept[k];
    svg::series s;
    s.name = p.label;
    s.color = colors[k % 8];
    s.points = {{p.intensity, p.flops}};
    s.line = false;
    s.point_titles = {fmt::format("{}: {:.3g} FLOP/byte, {}FLOP/s", p.label, p.intensity,
                                  svg::si_label(p.flops))};
    c.data.push_back(std::move(s));
  }
  return svg::render(c);
}

}  // namespace keel::perf
