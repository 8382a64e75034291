#include "keel/perf/svg.hpp"

#include "keel/core/error.hpp"
#include "keel/core/xml_escape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace keel::perf {
namespace {

std::string si(double v) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (v >= 1000 && i < 6) v /= 1000, ++i;
  return fmt::format("{:g}{}", v, prefixes[i]);
}

}  // namespace

std::string roofline_svg(const std::string& title, double peak_flops, double bandwidth,
                         const std::vector<svg_point>& points) {
  if (!(peak_flops > 0) || !(bandwidth > 0))
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
  x_lo = std::pow(10, std::floor(std::log10(x_lo)));
  x_hi = std::pow(10, std::ceil(std::log10(x_hi)));
  y_lo = std::pow(10, std::floor(std::log10(y_lo)));
  y_hi = std::pow(10, std::ceil(std::log10(y_hi)));
  const double W = 860, Hh = 560, left = 80, right = 250, top = 40, bottom = 60;
  const double pw = W - left - right, ph = Hh - top - bottom;
  auto X = [&](double v) {
    return left + pw * (std::log10(v) - std::log10(x_lo)) / (std::log10(x_hi) - std::log10(x_lo));
  };
  auto Y = [&](double v) {
    return top +
           ph * (1 - (std::log10(v) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo)));
  };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"14\">{}</text>\n",
      W, Hh, left, xml_escape(title));
  for (double v = x_lo; v <= x_hi * 1.001; v *= 10) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        X(v), top, top + ph, top + ph + 16, si(v));
  }
  for (double v = y_lo; v <= y_hi * 1.001; v *= 10) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        left, Y(v), left + pw, left - 6, Y(v) + 4, si(v));
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n",
      left + pw / 2, Hh - 20);
  svg += fmt::format(
      "<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">FLOP/s</text>\n",
      top + ph / 2);
  // The roof: bandwidth slope up to the ridge, then the flat peak.
  const double x0 = std::max(x_lo, y_lo / bandwidth);
  svg += fmt::format(
      "<polyline fill=\"none\" stroke=\"#c00\" stroke-width=\"2\" points=\"{:.1f},{:.1f} "
      "{:.1f},{:.1f} {:.1f},{:.1f}\"/>\n",
      X(x0), Y(x0 * bandwidth), X(ridge), Y(peak_flops), X(x_hi), Y(peak_flops));
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#c00\">peak {}FLOP/s, {}B/s, ridge {:.3g}</text>\n",
      X(ridge) + 4, Y(peak_flops) - 6, si(peak_flops), si(bandwidth), ridge);
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                          "#8c564b", "#e377c2", "#17becf", "#bcbd22"};
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const svg_point& p = kept[k];
    const char* color = colors[k % 8];
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"><title>{}: {:.3g} FLOP/byte, "
        "{}FLOP/s</title></circle>\n",
        X(p.intensity), Y(p.flops), color, xml_escape(p.label), p.intensity, si(p.flops));
    svg += fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
        left + pw + 20, top + 14 * k + 4, color, left + pw + 30, top + 14 * k + 8,
        xml_escape(p.label));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace keel::perf
