#include "keel/core/svg_chart.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "keel/core/error.hpp"

namespace keel::svg {
namespace {

series make_series(std::string name, std::string color,
                   std::vector<std::pair<double, double>> points, bool line = true) {
  series s;
  s.name = std::move(name), s.color = std::move(color), s.points = std::move(points);
  s.line = line;
  return s;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(SvgChart, DrawsSeriesLegendAndReferencesEscaped) {
  chart c;
  c.title = "a <b> & \"c\"";
  c.x = log_decades("x", 3, 700);
  c.y = {"y", scale::linear, 0, 1, {0, 0.5, 1}, {"0%", "50%", "100%"}};
  c.data.push_back({.name = "line <1>", .color = "#123456", .points = {{10, 0.2}, {100, 0.8}}});
  c.data.push_back(
      {.name = "", .color = "red", .points = {{5, 0.5}}, .line = false, .point_titles = {"p & q"}});
  c.references.push_back({0.9, "ceiling"});
  const std::string s = render(c);
  EXPECT_EQ(s.rfind("<svg", 0), 0u);
  EXPECT_NE(s.find("</svg>\n"), std::string::npos);
  EXPECT_NE(s.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_NE(s.find("line &lt;1&gt;"), std::string::npos);
  EXPECT_NE(s.find("<title>p &amp; q</title>"), std::string::npos);
  EXPECT_NE(s.find("ceiling"), std::string::npos);
  EXPECT_NE(s.find(">50%<"), std::string::npos);
  EXPECT_EQ(count(s, "<polyline"), 1u);  // the marker-only series draws no line
  EXPECT_EQ(count(s, "<circle"), 3u);    // 2 + 1 markers; unnamed series: no legend swatch
  EXPECT_EQ(s.find("<script"), std::string::npos);
  // log_decades: 1..1000, ticks at each decade.
  EXPECT_EQ(c.x.lo, 1);
  EXPECT_EQ(c.x.hi, 1000);
  EXPECT_EQ(c.x.ticks.size(), 4u);
  EXPECT_NE(s.find(">1K<"), std::string::npos);
}

TEST(SvgChart, MapsLogAndLinearAxesOntoThePlot) {
  chart c;
  c.width = 200, c.height = 200, c.left = 0, c.right = 0, c.top = 0, c.bottom = 0;
  c.x.kind = scale::log, c.x.lo = 1, c.x.hi = 100;
  c.y.lo = 0, c.y.hi = 10;
  c.data.push_back(make_series("", "#000", {{10, 5}}, false));
  const std::string s = render(c);
  EXPECT_NE(s.find("<circle cx=\"100.0\" cy=\"100.0\""), std::string::npos) << s;
}

TEST(SvgChart, SkipsUndrawablePointsAndRejectsBadAxes) {
  chart c;
  c.x.kind = scale::log, c.x.lo = 1, c.x.hi = 10;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  c.data.push_back(make_series("", "#000", {{0, 0.5}, {-1, 0.5}, {2, nan}, {3, 0.5}}));
  const std::string s = render(c);
  EXPECT_EQ(count(s, "<circle"), 1u);
  chart bad = c;
  bad.x.lo = 0;
  EXPECT_THROW(render(bad), invalid_argument);
  bad = c;
  bad.y.hi = bad.y.lo;
  EXPECT_THROW(render(bad), invalid_argument);
}

TEST(SvgChart, SiLabels) {
  EXPECT_EQ(si_label(0), "0");
  EXPECT_EQ(si_label(1500), "1.5K");
  EXPECT_EQ(si_label(2e12), "2T");
  EXPECT_EQ(si_label(-3e6), "-3M");
  EXPECT_EQ(si_label(0.25), "0.25");
  EXPECT_EQ(si_label(499712), "500K");
  EXPECT_EQ(si_label(999936), "1M");
}

}  // namespace
}  // namespace keel::svg
