// The SVG chart of `keel kv sweep`: plain SVG 1.1, no scripts, readable in any browser.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "keel/core/xml_escape.hpp"
#include "keel/kv/replay.hpp"

namespace keel::kv {
namespace {

const char* color_of(const std::string& policy) {
  static const std::map<std::string, const char*> colors = {
      {"lru", "#1f77b4"},    {"fifo", "#7f7f7f"}, {"lfu", "#2ca02c"},
      {"s3fifo", "#ff7f0e"}, {"keel", "#d62728"}, {"belady", "#000000"}};
  const auto it = colors.find(policy);
  return it == colors.end() ? "#9467bd" : it->second;
}

std::string tokens_label(double tokens) {
  if (tokens >= 1e6) return fmt::format("{:g}M", tokens / 1e6);
  if (tokens >= 1e3) return fmt::format("{:g}k", tokens / 1e3);
  return fmt::format("{:g}", tokens);
}

}  // namespace

std::string sweep_svg(std::span<const sweep_point> points, double infinite_hit_rate,
                      std::size_t block_size, const std::string& title) {
  constexpr double w = 760, h = 480, left = 70, right = 130, top = 50, bottom = 60;
  const double pw = w - left - right, ph = h - top - bottom;
  double lo = 1e300, hi = 0;
  for (const sweep_point& p : points) {
    const double tokens = static_cast<double>(p.capacity_blocks * block_size);
    lo = std::min(lo, tokens);
    hi = std::max(hi, tokens);
  }
  if (points.empty()) lo = hi = 1;
  const double llo = std::log10(lo), lhi = std::log10(hi) > llo ? std::log10(hi) : llo + 1;
  auto x = [&](double tokens) { return left + (std::log10(tokens) - llo) / (lhi - llo) * pw; };
  auto y = [&](double rate) { return top + (1.0 - rate) * ph; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"28\" font-size=\"15\">{3}</text>\n",
      w, h, left, xml_escape(title));
  for (int i = 0; i <= 10; ++i) {
    const double r = i / 10.0;
    svg += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e0e0e0\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}%</text>\n",
        left, left + pw, y(r), left - 6, y(r) + 4, i * 10);
  }
  std::vector<double> ticks;
  for (const sweep_point& p : points)
    ticks.push_back(static_cast<double>(p.capacity_blocks * block_size));
  std::sort(ticks.begin(), ticks.end());
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  for (const double tk : ticks) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#f0f0f0\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        x(tk), top, top + ph, top + ph + 16, tokens_label(tk));
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">cache capacity (tokens, log scale)</text>\n"
      "<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">"
      "prefix hit rate (token-weighted)</text>\n",
      left, top, pw, ph, left + pw / 2, h - 18, top + ph / 2);
  svg += fmt::format(
      "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#555\" "
      "stroke-dasharray=\"6,4\"/><text x=\"{3}\" y=\"{4:.1f}\">infinite {5:.1f}%</text>\n",
      left, left + pw, y(infinite_hit_rate), left + pw + 8, y(infinite_hit_rate) + 4,
      100 * infinite_hit_rate);
  std::vector<std::string> order;
  for (const sweep_point& p : points) {
    if (std::find(order.begin(), order.end(), p.policy) == order.end()) order.push_back(p.policy);
  }
  int legend = 0;
  for (const std::string& policy : order) {
    std::vector<std::pair<double, double>> line;
    for (const sweep_point& p : points) {
      if (p.policy == policy) {
        line.emplace_back(static_cast<double>(p.capacity_blocks * block_size), p.hit_rate_tokens);
      }
    }
    std::sort(line.begin(), line.end());
    std::string pts;
    for (const auto& [tk, r] : line) pts += fmt::format("{:.1f},{:.1f} ", x(tk), y(r));
    const char* color = color_of(policy);
    const char* dash = policy == "belady" ? " stroke-dasharray=\"2,3\"" : "";
    svg +=
        fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>\n",
                    color, dash, pts);
    for (const auto& [tk, r] : line) {
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", x(tk), y(r),
                         color);
    }
    const double ly = top + 20 + 18 * legend++;
    svg += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"{4}/><text x=\"{5}\" y=\"{6:.1f}\">{7}</text>\n",
        left + pw + 8, left + pw + 30, ly - 4, color, dash, left + pw + 36, ly, xml_escape(policy));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace keel::kv
