#include "keel/core/json_value.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "keel/core/error.hpp"

namespace keel {
namespace {

TEST(JsonValue, BuildsTheSameTreeAsNlohmannOnWellFormedTexts) {
  for (const char* text : {
           R"({"a": [1, -2, 1.5e3, true, false, null, "s"], "e": {}, "l": [], "n": {"x": [[]]}})",
           R"([{"k": "v\u00e9\n"}, [1, [2, [3]]], "", 0, -0, 0.25])",
           R"("just a string")",
           "42",
           "null",
           R"({"z": 1, "a": 2, "m": {"b": [true], "a": null}})",
       }) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_json(text, "t.json"), nlohmann::json::parse(text));
  }
}

TEST(JsonValue, IntegersStayExact) {
  const json_value v =
      parse_json("[18446744073709551615, -9223372036854775808, 9007199254740993]", "t.json");
  EXPECT_EQ(v[0].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(v[1].get<std::int64_t>(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(v[2].get<std::uint64_t>(), 9007199254740993u);
  EXPECT_TRUE(v[2].is_number_unsigned());
}

TEST(JsonValue, ARepeatedKeyKeepsItsLastValue) {
  EXPECT_EQ(parse_json(R"({"a": 1, "a": [2]})", "t.json"), nlohmann::json::parse(R"({"a": [2]})"));
}

TEST(JsonValue, ErrorsAreTheReadersWithLineAndColumn) {
  try {
    parse_json("{\n  \"a\": [1, 2,]\n}", "cfg.json");
    FAIL() << "no error";
  } catch (const parse_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cfg.json:2:", 0), 0u) << e.what();
  }
  EXPECT_THROW(parse_json("[1] [2]", "t.json"), parse_error);
  EXPECT_THROW(parse_json("[1e400]", "t.json"), parse_error);
  EXPECT_THROW(parse_json("", "t.json"), parse_error);
}

TEST(JsonValue, DepthIsBoundedByTheReadersLimit) {
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  EXPECT_THROW(parse_json(deep, "t.json"), parse_error);
  json_reader_options options;
  options.max_depth = 3;
  EXPECT_NO_THROW(parse_json("[[[]]]", "t.json", options));
  EXPECT_THROW(parse_json("[[[[]]]]", "t.json", options), parse_error);
}

}  // namespace
}  // namespace keel
