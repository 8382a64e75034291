#include "keel/core/svg_chart.hpp"

#include <fmt/format.h>

#include <cmath>

#include "keel/core/error.hpp"
#include "keel/core/xml_escape.hpp"

namespace keel::svg {
namespace {

// Maps data coordinates of one axis onto [from, to] pixels.
struct mapping {
  const axis& a;
  double from, to;
  double operator()(double v) const {
    const bool log = a.kind == scale::log;
    const double lo = log ? std::log10(a.lo) : a.lo, hi = log ? std::log10(a.hi) : a.hi;
    return from + (to - from) * ((log ? std::log10(v) : v) - lo) / (hi - lo);
  }
  bool drawable(double v) const { return std::isfinite(v) && (a.kind == scale::linear || v > 0); }
};

void check(const axis& a, const char* which) {
  if (!(a.lo < a.hi) || (a.kind == scale::log && !(a.lo > 0)))
    throw invalid_argument(
        fmt::format("svg chart: the {} axis needs 0 < lo < hi on a log scale, "
                    "lo < hi otherwise",
                    which));
}

std::string tick_label(const axis& a, std::size_t i) {
  return i < a.tick_labels.size() ? a.tick_labels[i] : si_label(a.ticks[i]);
}

std::string dash_attr(const std::string& dash) {
  return dash.empty() ? std::string() : fmt::format(" stroke-dasharray=\"{}\"", xml_escape(dash));
}

}  // namespace

axis log_decades(std::string label, double lo, double hi) {
  axis a;
  a.label = std::move(label);
  a.kind = scale::log;
  a.lo = std::pow(10, std::floor(std::log10(lo)));
  a.hi = std::pow(10, std::ceil(std::log10(hi)));
  if (!(a.lo > 0) || !std::isfinite(a.hi)) return a;  // render() reports the bad range
  if (a.hi <= a.lo) a.hi = a.lo * 10;
  for (double v = a.lo; v <= a.hi * 1.001; v *= 10) a.ticks.push_back(v);
  return a;
}

std::string si_label(double v) {
  static const char* const prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(v) >= 999.5 && i < 6) v /= 1000, ++i;  // 999.6 rounds to "1K", not "1e+03"
  return fmt::format("{:.3g}{}", v, prefixes[i]);
}

std::string render(const chart& c) {
  check(c.x, "x");
  check(c.y, "y");
  const double pw = c.width - c.left - c.right, ph = c.height - c.top - c.bottom;
  const mapping X{c.x, c.left, c.left + pw}, Y{c.y, c.top + ph, c.top};

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"{2}\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{3}\" y=\"{4}\" font-size=\"{5}\">{6}</text>\n",
      c.width, c.height, c.font_size, c.left, c.top / 2 + 4, c.font_size + 3, xml_escape(c.title));
  for (std::size_t i = 0; i < c.x.ticks.size(); ++i) {
    if (!X.drawable(c.x.ticks[i])) continue;
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        X(c.x.ticks[i]), c.top, c.top + ph, c.top + ph + 16, xml_escape(tick_label(c.x, i)));
  }
  for (std::size_t i = 0; i < c.y.ticks.size(); ++i) {
    if (!Y.drawable(c.y.ticks[i])) continue;
    svg += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        c.left, c.left + pw, Y(c.y.ticks[i]), c.left - 6, Y(c.y.ticks[i]) + 4,
        xml_escape(tick_label(c.y, i)));
  }
  if (c.frame) {
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n",
        c.left, c.top, pw, ph);
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n"
      "<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      c.left + pw / 2, c.height - 18, xml_escape(c.x.label), c.top + ph / 2, xml_escape(c.y.label));
  for (const reference_line& r : c.references) {
    if (!Y.drawable(r.y)) continue;
    svg += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\"{4}/>"
        "<text x=\"{5}\" y=\"{6:.1f}\">{7}</text>\n",
        c.left, c.left + pw, Y(r.y), xml_escape(r.color), dash_attr(r.dash), c.left + pw + 8,
        Y(r.y) + 4, xml_escape(r.label));
  }
  int legend = 0;
  for (const series& s : c.data) {
    const std::string color = xml_escape(s.color), dash = dash_attr(s.dash);
    std::string points;
    for (const auto& [px, py] : s.points) {
      if (X.drawable(px) && Y.drawable(py)) points += fmt::format("{:.1f},{:.1f} ", X(px), Y(py));
    }
    if (s.line && !points.empty()) {
      points.pop_back();
      svg += fmt::format(
          "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>\n", color,
          dash, points);
    }
    for (std::size_t i = 0; s.markers && i < s.points.size(); ++i) {
      const auto [px, py] = s.points[i];
      if (!X.drawable(px) || !Y.drawable(py)) continue;
      const std::string title =
          i < s.point_titles.size() ? "<title>" + xml_escape(s.point_titles[i]) + "</title>" : "";
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\">{}</circle>\n",
                         X(px), Y(py), color, title);
    }
    if (s.name.empty()) continue;
    const double ly = c.top + 14 + 16 * legend++, lx = c.left + pw + 8;
    if (s.line) {
      svg += fmt::format(
          "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" "
          "stroke-width=\"2\"{4}/>",
          lx, lx + 22, ly - 4, color, dash);
    } else {
      svg += fmt::format("<circle cx=\"{}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>", lx + 11, ly - 4,
                         color);
    }
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\">{}</text>\n", lx + 28, ly, xml_escape(s.name));
  }
  for (const note& n : c.notes) {
    if (!X.drawable(n.x) || !Y.drawable(n.y)) continue;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>\n", X(n.x) + n.dx,
                       Y(n.y) + n.dy, xml_escape(n.color), xml_escape(n.text));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace keel::svg
