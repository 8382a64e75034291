// The coefficients of libcurand's double erfcinv (src/random/tables/erfcinv_tables.cpp): the CUDA
// header's layout and keel's text format, their errors, and the lookup. keel ships no
// coefficient values: headers with the real ones are written here at run time from the tables
// found on the machine (skipped without them); the error cases use made-up values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "keel/core/error.hpp"
#include "keel/random/erfcinv_tables.hpp"

namespace kr = keel::random;

namespace {

const kr::erfcinv_tables* real_tables() { return kr::erfcinv_default_tables().tables.get(); }

// Made-up coefficients: the right counts, values no erfcinv has.
kr::erfcinv_tables made_up() {
  kr::erfcinv_tables t;
  double v = 0.125;
  for (auto* c : {t.p18.data(), t.q18.data()})
    for (int k = 0; k < 7; ++k) c[k] = v += 0.25;
  for (double& c : t.p39) c = -(v += 0.5);
  for (double& c : t.q39) c = v += 0.5;
  for (double& c : t.p59) c = v += 1;
  for (double& c : t.q59) c = v += 1;
  return t;
}

// Horner lines from the highest coefficient down, as the toolkit writes them; `monic`: the
// first line is `q = t + c`. `tight` leaves out the blanks around '*'.
template <class C>
std::string horner(const C& c, char var, bool monic, bool tight) {
  auto term = [](double x) { return fmt::format("{} {:.17g}", x < 0 ? '-' : '+', x < 0 ? -x : x); };
  std::string s;
  const std::size_t top = c.size() - 1;
  if (monic)
    s += fmt::format("    {} = t {};\n", var, term(c[top]));
  else
    s += fmt::format("    {} = {:.17g};\n", var, c[top]);
  for (std::size_t k = top; k-- > 0;)
    s += fmt::format("    {0} = {0}{1}t {2};\n", var, tight ? "*" : " * ", term(c[k]));
  return s;
}

std::string block(const char* label, bool line_comment) {
  return line_comment
             ? fmt::format("    // Blair, Edwards, Johnson. {}\n", label)
             : fmt::format(
                   "    /* Based on: Blair, Edwards, Johnson, Math. Comp. 30 (1976). {}\n     */\n",
                   label);
}

// A header in the layout of the toolkit's crt/math_functions.hpp: declarations and a float
// overload first, then double erfinv (Tables 59, 39, 18) and erfcinv (Table 59 and one more).
std::string header_of(const kr::erfcinv_tables& t, bool variant = false) {
  std::string s =
      "#pragma once\n/* erfinv(x), erfcinv(x): double versions below */\n"
      "extern double erfinv(double);\n"
      "static inline float erfinv(const float a) { return erfinvf(a); }\n\n"
      "__func__(double erfinv(const double a))\n{\n  double p, q, t, fa;\n  fa = fabs(a);\n"
      "  if (fa >= 1.0) {\n    t = a * exp(1000.0);\n  } else if (fa >= 0.9375) {\n";
  s += block("Table 59", variant);
  s += "    t = log1p(-fa);\n    t = 1.0 / sqrt(-t);\n";
  s += horner(t.p59, 'p', false, variant) + horner(t.q59, 'q', true, variant);
  s += "    t = p / (q * t);\n    if (a < 0.0) t = -t;\n  } else if (fa >= 0.75) {\n";
  s += block("Table 39", variant);
  s += "    t = a * a - .87890625;\n";
  s += horner(t.p39, 'p', false, variant) + horner(t.q39, 'q', true, variant);
  s += "    p = p / q;\n    t = a * p;\n  } else {\n";
  s += block("Table 18", variant);
  s += "    t = a * a - .5625;\n";
  s += horner(t.p18, 'p', false, variant) + horner(t.q18, 'q', true, variant);
  s += "    p = p / q;\n    t = a * p;\n  }\n  return t;\n}\n\n"
       "__func__(double erfcinv(const double a))\n{\n  double t;\n  if (a >= 0.0625) {\n"
       "    t = erfinv (1.0 - a);\n  } else if (a >= 1e-100) {\n    double p, q;\n";
  s += block("Table 59", variant);
  s += "    t = log(a);\n    t = 1.0 / sqrt(-t);\n";
  s += horner(t.p59, 'p', false, variant) + horner(t.q59, 'q', true, variant);
  s += "    t = p / (q * t);\n  } else {\n    double p, q;\n";
  s += block("Table 82", variant);
  s += "    t = log(a);\n    p = 1.5;\n    p = p * t + 2.5;\n    q = t + 3.5;\n    t = p / (q * "
       "t);\n  }\n"
       "  return t;\n}\n";
  return s;
}

std::string text_of(const kr::erfcinv_tables& t) {
  std::ostringstream out;
  kr::write_erfcinv_tables(out, t);
  return out.str();
}

// The parse_error a parser throws on `text`, or nothing.
template <class Parse>
std::optional<keel::parse_error> error_of(const std::string& text, Parse&& parse) {
  std::istringstream in(text);
  try {
    parse(in, "h.hpp");
  } catch (const keel::parse_error& e) {
    return e;
  }
  return std::nullopt;
}
std::optional<keel::parse_error> header_error(const std::string& text) {
  return error_of(
      text, [](std::istream& in, const std::string& s) { kr::parse_erfcinv_cuda_header(in, s); });
}
std::optional<keel::parse_error> text_error(const std::string& text) {
  return error_of(text,
                  [](std::istream& in, const std::string& s) { kr::read_erfcinv_tables(in, s); });
}

void expect_error(const std::optional<keel::parse_error>& e, const std::string& what) {
  ASSERT_TRUE(e) << "accepted input with " << what;
  EXPECT_NE(std::string(e->what()).find(what), std::string::npos) << e->what();
  EXPECT_EQ(std::string(e->what()).find('\n'), std::string::npos) << e->what();
  EXPECT_GT(e->line(), 0u);
}

struct scoped_env {
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~scoped_env() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  const char* name_;
  std::optional<std::string> old_;
};

bool same(const kr::erfcinv_tables& a, const kr::erfcinv_tables& b) {
  return a.p18 == b.p18 && a.q18 == b.q18 && a.p39 == b.p39 && a.q39 == b.q39 && a.p59 == b.p59 &&
         a.q59 == b.q59;
}

}  // namespace

TEST(random_erfcinv_tables, cuda_header_layout_is_parsed) {
  if (!real_tables()) GTEST_SKIP() << kr::erfcinv_default_tables().description;
  for (bool variant : {false, true}) {
    std::istringstream in(header_of(*real_tables(), variant));
    const kr::erfcinv_tables t = kr::parse_erfcinv_cuda_header(in, "h.hpp");
    EXPECT_TRUE(same(t, *real_tables())) << "variant " << variant;
    EXPECT_EQ(t.source, "h.hpp");
  }
}

TEST(random_erfcinv_tables, malformed_headers_are_one_line_errors) {
  const std::string good = header_of(made_up());
  auto without = [&](const std::string& part) {
    std::string s = good;
    s.erase(s.find(part), part.size());
    return s;
  };
  // Made-up values in the right layout pass the parser and fail the check of the values.
  expect_error(header_error(good), "the tables give erfcinv(");
  expect_error(header_error(without("Table 18")), "no 'Table 18' block in erfinv");
  expect_error(header_error(good.substr(0, good.find("__func__(double erfcinv"))),
               "no definition of 'double erfcinv(...)'");
  expect_error(header_error("int x;"), "no definition of 'double erfinv(...)'");
  // A Horner line missing or unreadable: the count is wrong.
  const std::string p39_line = fmt::format("    p = p * t - {:.17g};\n", -made_up().p39[3]);
  expect_error(header_error(without(p39_line)),
               "Table 39 of erfinv: 8 numerator and 8 denominator coefficients, "
               "expected 9 and 8");
  std::string suffixed = good;
  suffixed.insert(suffixed.find(';', suffixed.find(p39_line)), "f");
  expect_error(header_error(suffixed), "Table 39 of erfinv: 5 numerator");
  // erfcinv's Table 59 must be erfinv's.
  std::string other = good;
  const std::size_t in_erfcinv = other.find("Table 59", other.find("double erfcinv"));
  const std::size_t line = other.find("p = p * t", in_erfcinv);
  other.replace(other.find("+ ", line), 2, "- ");
  expect_error(header_error(other), "erfcinv's Table 59 differs from erfinv's");
}

TEST(random_erfcinv_tables, text_format_round_trips) {
  if (!real_tables()) GTEST_SKIP() << kr::erfcinv_default_tables().description;
  std::istringstream in(text_of(*real_tables()));
  const kr::erfcinv_tables back = kr::read_erfcinv_tables(in, "t.txt");
  EXPECT_TRUE(same(back, *real_tables()));
  EXPECT_EQ(back.source, "t.txt");
}

TEST(random_erfcinv_tables, text_format_errors_name_the_line) {
  const std::string good = text_of(made_up());
  // The polynomials start on line 3, after write_erfcinv_tables's two comment lines.
  const std::size_t line3 = good.find('\n', good.find('\n') + 1) + 1;
  const std::string first = good.substr(line3, good.find('\n', line3) + 1 - line3);
  auto with_line3 = [&](const std::string& l) {
    std::string s = good;
    s.replace(line3, first.size(), l);
    return s;
  };
  for (const auto& [text, what] : std::initializer_list<std::pair<std::string, std::string>>{
           {with_line3("p17 1 2 3\n"), "'p17' is not a polynomial name"},
           {with_line3("p18 1 2 3\n"), "p18 has 3 coefficients, expected 7"},
           {with_line3("p18 1 2 3 4 5 6 x7\n"), "coefficient 6 of p18 'x7' is not a finite number"},
           {with_line3("p18 1 2 3 4 5 6 inf\n"), "is not a finite number"},
       }) {
    const auto e = text_error(text);
    expect_error(e, what);
    if (e) EXPECT_EQ(e->line(), 3u) << e->what();
  }
  // The column is the field's own, not that of an earlier field holding the same text.
  const auto tabbed = text_error(with_line3("p18\t1 2 3 4 5 6 p\n"));
  expect_error(tabbed, "coefficient 6 of p18 'p'");
  if (tabbed) EXPECT_EQ(tabbed->column(), 17u) << tabbed->what();
  const auto twice = text_error(with_line3(first + first));
  expect_error(twice, "p18 appears twice");
  if (twice) EXPECT_EQ(twice->line(), 4u) << twice->what();
  expect_error(text_error(with_line3("")), "no line for p18");
  expect_error(text_error(good), "the tables give erfcinv(");
}

TEST(random_erfcinv_tables, a_changed_coefficient_is_caught) {
  if (!real_tables()) GTEST_SKIP() << kr::erfcinv_default_tables().description;
  // Each coefficient's sign flipped in turn: the check of the values rejects every one.
  for (std::size_t poly = 0; poly < 6; ++poly)
    for (std::size_t k = 0;; ++k) {
      kr::erfcinv_tables t = *real_tables();
      std::array<std::pair<double*, std::size_t>, 6> all = {{{t.p18.data(), 7},
                                                             {t.q18.data(), 7},
                                                             {t.p39.data(), 9},
                                                             {t.q39.data(), 8},
                                                             {t.p59.data(), 11},
                                                             {t.q59.data(), 10}}};
      if (k == all[poly].second) break;
      all[poly].first[k] = -all[poly].first[k];
      expect_error(text_error(text_of(t)), "the tables give erfcinv(");
    }
}

TEST(random_erfcinv_tables, lookup_follows_the_environment) {
  const std::string dir = testing::TempDir();
  {
    scoped_env file("KEEL_ERFCINV_COEFFICIENTS", (dir + "keel_no_such_file.txt").c_str());
    const auto missing = kr::find_erfcinv_tables();
    EXPECT_FALSE(missing.tables);
    EXPECT_NE(missing.description.find("no such file"), std::string::npos) << missing.description;
    EXPECT_NE(missing.description.find("keel's own erfcinv"), std::string::npos)
        << missing.description;
  }
  {
    scoped_env file("KEEL_ERFCINV_COEFFICIENTS", nullptr);
    scoped_env include("KEEL_CUDA_INCLUDE_DIR", dir.c_str());  // no crt/math_functions.hpp there
    const auto absent = kr::find_erfcinv_tables();
    EXPECT_FALSE(absent.tables);
    EXPECT_NE(absent.description.find("not found"), std::string::npos) << absent.description;
  }
  {
    const std::string path = dir + "keel_erfcinv_bad.txt";
    std::ofstream(path) << text_of(made_up());
    scoped_env file("KEEL_ERFCINV_COEFFICIENTS", path.c_str());
    const auto bad = kr::find_erfcinv_tables();
    EXPECT_FALSE(bad.tables);
    EXPECT_NE(bad.description.find("unusable"), std::string::npos) << bad.description;
  }
  if (!real_tables()) return;
  const std::string path = dir + "keel_erfcinv.txt";
  std::ofstream(path) << text_of(*real_tables());
  scoped_env file("KEEL_ERFCINV_COEFFICIENTS", path.c_str());
  const auto found = kr::find_erfcinv_tables();
  ASSERT_TRUE(found.tables) << found.description;
  EXPECT_TRUE(same(*found.tables, *real_tables()));
  EXPECT_EQ(found.description, path);
}
