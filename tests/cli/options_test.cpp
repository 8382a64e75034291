// "One way to bind options": every numeric option of every command carries the validator of
// add_number (tools/keel/cli.hpp), and the validator refuses what CLI11 alone would wrap.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"

namespace keel::cli {
namespace {

bool numeric_type(const std::string& type) {
  for (const char* t : {"INT", "UINT", "FLOAT", "NUMBER"}) {
    const std::string prefix = t;
    if (type == prefix || type.rfind(prefix + ":", 0) == 0 || type.rfind(prefix + " ", 0) == 0) {
      return true;
    }
  }
  return false;
}

void walk(CLI::App* app, const std::string& path, int& numeric,
          std::vector<std::string>& unchecked) {
  for (CLI::Option* o : app->get_options()) {
    if (!numeric_type(o->get_type_name())) continue;
    ++numeric;
    try {
      o->get_validator(k_number_check);
    } catch (const CLI::OptionNotFound&) {
      unchecked.push_back(path + " " + o->get_name() + " (" + o->get_type_name() + ")");
    }
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    walk(sub, path + " " + sub->get_name(), numeric, unchecked);
  }
}

TEST(CliOptions, EveryNumericOptionIsBoundWithAddNumber) {
  CLI::App app{"keel", "keel"};
  add_all_commands(app);
  int numeric = 0;
  std::vector<std::string> unchecked;
  walk(&app, "keel", numeric, unchecked);
  EXPECT_GT(numeric, 60);  // the tree was walked
  EXPECT_TRUE(unchecked.empty()) << testing::PrintToString(unchecked);
}

// Parses `value` for an option bound like `target`; returns the error ("" on success).
template <class T>
std::string parse(T& target, const std::string& value, T lo, T hi, bool lo_open = false) {
  CLI::App app{"t"};
  add_number(&app, "--x", target, "x", lo, hi, lo_open);
  std::vector<std::string> args{"--x", value};
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(CliOptions, UnsignedRefusesWhatCli11Wraps) {
  std::uint64_t v = 7;
  const std::uint64_t max = ~std::uint64_t{0};
  EXPECT_EQ(parse(v, "-1", std::uint64_t{0}, max),
            "--x: -1 is negative, expected an integer in [0, 18446744073709551615]");
  EXPECT_EQ(parse(v, "18446744073709551616", std::uint64_t{0}, max),
            "--x: 18446744073709551616 is out of range, expected an integer in [0, "
            "18446744073709551615]");
  EXPECT_NE(parse(v, "99999999999999999999999", std::uint64_t{0}, max).find("out of range"),
            std::string::npos);
  EXPECT_NE(parse(v, "1.5", std::uint64_t{0}, max).find("not an integer"), std::string::npos);
  EXPECT_NE(parse(v, "0x10", std::uint64_t{0}, max).find("not an integer"), std::string::npos);
  EXPECT_NE(parse(v, "", std::uint64_t{0}, max).find("not an integer"), std::string::npos);
  EXPECT_EQ(v, 7u);
  EXPECT_EQ(parse(v, "18446744073709551615", std::uint64_t{0}, max), "");
  EXPECT_EQ(v, max);
  EXPECT_EQ(parse(v, "010", std::uint64_t{0}, max), "");  // decimal, not octal
  EXPECT_EQ(v, 10u);
  EXPECT_EQ(parse(v, "+3", std::uint64_t{0}, max), "");
  EXPECT_EQ(v, 3u);
}

TEST(CliOptions, SignedAndNarrowRanges) {
  int v = 0;
  EXPECT_EQ(parse(v, "257", 1, 256), "--x: 257 is out of range, expected an integer in [1, 256]");
  EXPECT_EQ(parse(v, "0", 1, 256), "--x: 0 is out of range, expected an integer in [1, 256]");
  EXPECT_EQ(parse(v, "-5", -10, 10), "");
  EXPECT_EQ(v, -5);
  std::optional<int> device;
  CLI::App app{"t"};
  add_number(&app, "--device", device, "d", 0, 7);
  EXPECT_THROW(app.parse(std::vector<std::string>{"-1", "--device"}), CLI::ValidationError);
}

TEST(CliOptions, RealsMustBeFiniteAndInRange) {
  double v = 1;
  const double max = std::numeric_limits<double>::max();
  EXPECT_EQ(parse(v, "nan", 0.0, max), "--x: nan is not a finite number, expected a number >= 0");
  EXPECT_NE(parse(v, "-NaN", 0.0, max).find("not a finite number"), std::string::npos);
  EXPECT_NE(parse(v, "inf", 0.0, max).find("not a finite number"), std::string::npos);
  EXPECT_NE(parse(v, "-Infinity", -max, max).find("not a finite number"), std::string::npos);
  EXPECT_NE(parse(v, "1e400", 0.0, max).find("out of range"), std::string::npos);
  EXPECT_NE(parse(v, "-1", 0.0, max).find("out of range"), std::string::npos);
  EXPECT_EQ(parse(v, "0", 0.0, max, true), "--x: 0 is out of range, expected a number > 0");
  EXPECT_NE(parse(v, "2abc", 0.0, max).find("not a number"), std::string::npos);
  EXPECT_NE(parse(v, "0x1p3", 0.0, max).find("not a number"), std::string::npos);
  EXPECT_EQ(v, 1.0);
  EXPECT_EQ(parse(v, "2.5e3", 0.0, max), "");
  EXPECT_EQ(v, 2500.0);
  EXPECT_EQ(parse(v, "0.1", 0.0, 1.0), "");
  EXPECT_EQ(v, 0.1);
  std::vector<double> mnk;
  CLI::App app{"t"};
  add_number(&app, "mnk", mnk, "m n k", 0.0, 1e12, true)->expected(3);
  EXPECT_THROW(app.parse(std::vector<std::string>{"nan", "2", "1"}), CLI::ValidationError);
}

}  // namespace
}  // namespace keel::cli
