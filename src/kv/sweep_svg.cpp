// The SVG chart of `keel kv sweep`, drawn by core's chart writer.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "keel/core/svg_chart.hpp"
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

}  // namespace

std::string sweep_svg(std::span<const sweep_point> points, double infinite_hit_rate,
                      std::size_t block_size, const std::string& title) {
  svg::chart c;
  c.title = title;
  c.frame = true;
  c.y.label = "prefix hit rate (token-weighted)";
  for (int i = 0; i <= 10; ++i) {
    c.y.ticks.push_back(i / 10.0);
    c.y.tick_labels.push_back(fmt::format("{}%", i * 10));
  }
  c.x.label = "cache capacity (tokens, log scale)";
  c.x.kind = svg::scale::log;
  std::vector<double>& ticks = c.x.ticks;
  for (const sweep_point& p : points) {
    if (p.capacity_blocks > 0) ticks.push_back(static_cast<double>(p.capacity_blocks * block_size));
  }
  std::sort(ticks.begin(), ticks.end());
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  c.x.lo = ticks.empty() ? 1 : ticks.front();
  c.x.hi = ticks.empty() || ticks.back() <= c.x.lo ? c.x.lo * 10 : ticks.back();
  c.references.push_back(
      {infinite_hit_rate, fmt::format("infinite {:.1f}%", 100 * infinite_hit_rate)});

  std::vector<std::string> order;
  for (const sweep_point& p : points) {
    if (std::find(order.begin(), order.end(), p.policy) == order.end()) order.push_back(p.policy);
  }
  for (const std::string& policy : order) {
    svg::series s;
    s.name = policy;
    s.color = color_of(policy);
    if (policy == "belady") s.dash = "2,3";
    for (const sweep_point& p : points) {
      if (p.policy == policy)
        s.points.emplace_back(static_cast<double>(p.capacity_blocks * block_size),
                              p.hit_rate_tokens);
    }
    std::sort(s.points.begin(), s.points.end());
    c.data.push_back(std::move(s));
  }
  return svg::render(c);
}

}  // namespace keel::kv
