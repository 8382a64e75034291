#include "keel/core/json_reader.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "keel/core/error.hpp"

namespace keel {
namespace {

// The events of a whole text, one word each ("{", "}", "[", "]", "key:a", "str:a", "u:1",
// "i:-1", "f:1.5", "true", "false", "null"), each followed by "@offset".
std::vector<std::string> events(std::string_view text, const json_reader_options& options = {}) {
  json_reader rd(text, "t.json", options);
  std::vector<std::string> out;
  for (;;) {
    const json_event e = rd.next();
    std::string word;
    switch (e) {
      case json_event::begin_object: word = "{"; break;
      case json_event::end_object: word = "}"; break;
      case json_event::begin_array: word = "["; break;
      case json_event::end_array: word = "]"; break;
      case json_event::key: word = "key:" + std::string(rd.string()); break;
      case json_event::string: word = "str:" + std::string(rd.string()); break;
      case json_event::number:
        switch (rd.number_type()) {
          case json_number::unsigned_integer: word = "u:" + std::to_string(rd.as_unsigned()); break;
          case json_number::signed_integer: word = "i:" + std::to_string(rd.as_signed()); break;
          case json_number::floating: word = "f:" + std::to_string(rd.as_double()); break;
        }
        break;
      case json_event::boolean: word = rd.as_bool() ? "true" : "false"; break;
      case json_event::null: word = "null"; break;
      case json_event::end: return out;
    }
    out.push_back(word + "@" + std::to_string(rd.offset()));
  }
}

// The one string of `["..."]`.
std::string string_of(std::string_view text, const json_reader_options& options = {}) {
  json_reader rd(text, "t.json", options);
  EXPECT_EQ(rd.next(), json_event::begin_array);
  EXPECT_EQ(rd.next(), json_event::string);
  std::string s(rd.string());
  EXPECT_EQ(rd.next(), json_event::end_array);
  EXPECT_EQ(rd.next(), json_event::end);
  return s;
}

TEST(JsonReader, EventsWithTheirOffsets) {
  const std::vector<std::string> want = {
      "{@1",     "key:a@2",  "[@7",      "u:1@8",    "i:-2@11", "f:1500.000000@15",
      "true@22", "false@28", "null@35",  "str:s@41", "]@44",    "key:e@47",
      "{@52",    "}@53",     "key:l@56", "[@61",     "]@62",    "}@64"};
  EXPECT_EQ(events(R"( {"a": [1, -2, 1.5e3, true, false, null, "s"], "e": {}, "l": [] } )"), want);
  EXPECT_EQ(events("\t\r\n 7 \n"), (std::vector<std::string>{"u:7@4"}));
  EXPECT_EQ(events("\"x\""), (std::vector<std::string>{"str:x@0"}));
  // A repeated key is delivered twice: the consumer decides (the last counts for both of
  // keel's).
  EXPECT_EQ(events(R"({"k":1,"k":2})"),
            (std::vector<std::string>{"{@0", "key:k@1", "u:1@5", "key:k@7", "u:2@11", "}@12"}));
}

// The one number of a text, as the reader delivers it.
struct number_read {
  json_number type;
  std::uint64_t u;
  std::int64_t i;
  double d;
};

number_read one(std::string_view text) {
  json_reader rd(text, "n");
  EXPECT_EQ(rd.next(), json_event::number) << text;
  number_read n{};
  n.type = rd.number_type();
  n.u = rd.as_unsigned();
  n.i = rd.as_signed();
  n.d = rd.as_double();
  EXPECT_EQ(rd.next(), json_event::end) << text;
  return n;
}

TEST(JsonReader, NumbersAreExact) {
  number_read r = one("18446744073709551615");
  EXPECT_EQ(r.type, json_number::unsigned_integer);
  EXPECT_EQ(r.u, UINT64_MAX);
  EXPECT_EQ(one("9007199254740993").u, 9007199254740993u);  // 2^53 + 1: no double holds it
  r = one("-9223372036854775808");
  EXPECT_EQ(r.type, json_number::signed_integer);
  EXPECT_EQ(r.i, INT64_MIN);
  EXPECT_EQ(one("-1").i, -1);
  r = one("-0");
  EXPECT_EQ(r.type, json_number::unsigned_integer);
  EXPECT_EQ(r.u, 0u);
  // Wider integers, fractions and exponents are doubles.
  r = one("18446744073709551616");
  EXPECT_EQ(r.type, json_number::floating);
  EXPECT_EQ(r.d, 18446744073709551616.0);
  r = one("-9223372036854775809");
  EXPECT_EQ(r.type, json_number::floating);
  EXPECT_EQ(r.d, -9223372036854775808.0);
  EXPECT_EQ(one("1E+2").type, json_number::floating);
  EXPECT_EQ(one("1E+2").d, 100.0);
  EXPECT_EQ(one("2.5e-1").d, 0.25);
  EXPECT_EQ(one("0.1").d, 0.1);
  EXPECT_TRUE(std::signbit(one("-0.0").d));
  // Underflow reads as the nearest double (a subnormal or zero); overflow is an error.
  EXPECT_EQ(one("1e-400").d, 0.0);
  EXPECT_EQ(one("3e-324").d, 4.9406564584124654e-324);
  EXPECT_EQ(one("4e-320").d, 4e-320);
  EXPECT_EQ(one("-8").d, -8.0);  // integers as doubles too
}

TEST(JsonReader, StringsAreDecoded) {
  EXPECT_EQ(string_of(R"(["q\"\\\/\b\f\n\r\t\u00e9\ud834\udd1e\u0000"])"),
            std::string("q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9d\x84\x9e\0", 16));
  EXPECT_EQ(string_of("[\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f\"]"),
            "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f");
  EXPECT_EQ(string_of(R"([""])"), "");
  EXPECT_EQ(events(R"({"t\u0069me":1})"),
            (std::vector<std::string>{"{@0", "key:time@1", "u:1@13", "}@14"}));
  // An escaped string stays valid until the next event even when the next one has escapes.
  json_reader rd(R"(["a\n", "b\t"])", "s");
  rd.next();
  rd.next();
  EXPECT_EQ(rd.string(), "a\n");
  rd.next();
  EXPECT_EQ(rd.string(), "b\t");
}

TEST(JsonReader, LoneSurrogatesAreKeptOnlyWhenAsked) {
  json_reader_options keep;
  keep.surrogates = json_surrogates::keep;
  EXPECT_EQ(string_of(R"(["\ud800"])", keep), "\xed\xa0\x80");
  EXPECT_EQ(string_of(R"(["\udc00\ud800"])", keep), "\xed\xb0\x80\xed\xa0\x80");
  EXPECT_EQ(string_of(R"(["\ud800\u0041"])", keep),
            "\xed\xa0\x80"
            "A");
  EXPECT_EQ(string_of(R"(["\ud834\udd1e"])", keep), "\xf0\x9d\x84\x9e");  // pairs are joined
  EXPECT_EQ(string_of("[\"\xed\xa0\x80\"]", keep), "\xed\xa0\x80");
  EXPECT_THROW(string_of(R"(["\ud800\u12"])", keep), parse_error);
  for (const char* text :
       {R"(["\ud800"])", R"(["\udc00"])", R"(["\ud800\u0041"])", "[\"\xed\xa0\x80\"]"})
    EXPECT_THROW(string_of(text), parse_error) << text;
}

struct bad_case {
  std::string text;
  std::size_t line, column;
  std::string message;
};

TEST(JsonReader, ErrorsNameTheLineAndColumn) {
  const std::vector<bad_case> bad = {
      {"", 1, 1, "expected a value"},
      {"   ", 1, 4, "expected a value"},
      {"[", 1, 2, "expected a value"},
      {"[1", 1, 3, "expected ']' or ','"},
      {"[1 2]", 1, 4, "expected ']' or ','"},
      {"[1,]", 1, 4, "expected a value"},
      {"{", 1, 2, "expected a string key or '}'"},
      {"{1:2}", 1, 2, "expected a string key or '}'"},
      {"{\"a\"}", 1, 5, "expected ':'"},
      {"{\"a\":1,}", 1, 8, "expected a string key"},
      {"{\"a\":1", 1, 7, "expected '}' or ','"},
      {"{\"a\":1]", 1, 7, "expected '}' or ','"},
      {"[01]", 1, 2, "leading zero in number"},
      {"[-]", 1, 3, "expected a digit after '-'"},
      {"[1.]", 1, 4, "expected digits after '.'"},
      {"[1e]", 1, 4, "expected digits in exponent"},
      {"[1e400]", 1, 2, "number out of range"},
      {"[-1e999]", 1, 2, "number out of range"},
      {"[+1]", 1, 2, "expected a value"},
      {"[.5]", 1, 2, "expected a value"},
      {"nul", 1, 1, "expected a value"},
      {"[tru]", 1, 2, "expected a value"},
      {"[NaN]", 1, 2, "expected a value"},
      {"[1] x", 1, 5, "trailing characters after the JSON document"},
      {std::string("[1]\0", 4), 1, 4, "trailing characters after the JSON document"},
      {"\xef\xbb\xbf[1]", 1, 1, "expected a value"},
      {"\"abc", 1, 1, "unterminated string"},
      {"[\"a\\", 1, 2, "unterminated string"},
      {"[\"\\x\"]", 1, 4, "bad escape in string"},
      {"[\"\\u12\"]", 1, 7, "bad \\u escape in string"},
      {"[\"\\u12", 1, 7, "bad \\u escape in string"},
      {"[\"\\ud800\"]", 1, 9, "unpaired surrogate in string"},
      {"[\"\\udc00\"]", 1, 9, "unpaired surrogate in string"},
      {"[\"\\ud800\\u0041\"]", 1, 15, "unpaired surrogate in string"},
      {"[\"a\x01\"]", 1, 4, "control character in string"},
      {"[\"a\nb\"]", 1, 4, "control character in string"},
      {"[\"\xff\"]", 1, 3, "invalid UTF-8 in string"},
      {"[\"\xc0\xaf\"]", 1, 3, "invalid UTF-8 in string"},
      {"[\"\xed\xa0\x80\"]", 1, 4, "invalid UTF-8 in string"},
      {"[\"\xe2\x82\"]", 1, 5, "invalid UTF-8 in string"},
      {"[\"\xf4\x90\x80\x80\"]", 1, 4, "invalid UTF-8 in string"},
      {"[\"\xe2\x82", 1, 5, "invalid UTF-8 in string"},
      {"{\n  \"a\": [1,\n  2,,]\n}", 3, 5, "expected a value"},
  };
  for (const auto& [text, line, column, message] : bad) {
    try {
      events(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const parse_error& e) {
      EXPECT_EQ(e.message(), message) << text;
      EXPECT_EQ(e.line(), line) << text;
      EXPECT_EQ(e.column(), column) << text;
      EXPECT_EQ(std::string(e.what()),
                "t.json:" + std::to_string(line) + ":" + std::to_string(column) + ": " + message);
    }
  }
}

TEST(JsonReader, NestingIsLimited) {
  json_reader_options three;
  three.max_depth = 3;
  EXPECT_EQ(events("[[{\"a\":1}]]", three).size(), 8u);
  try {
    events("[[[[1]]]]", three);
    FAIL();
  } catch (const parse_error& e) {
    EXPECT_EQ(e.column(), 4u);
    EXPECT_EQ(e.message(), "nesting deeper than 3 levels (limit)");
  }
  // The default limit, without recursion: a deep text is refused, not a stack overflow.
  EXPECT_THROW(events(std::string(1000000, '[')), parse_error);
  EXPECT_EQ(events(std::string(64, '[') + std::string(64, ']')).size(), 128u);
  EXPECT_THROW(events(std::string(65, '[') + std::string(65, ']')), parse_error);
}

TEST(JsonReader, SkipReadsThroughOneValue) {
  json_reader rd(R"({"a": {"b": [1, {"c": "\u0041"}], "d": []}, "e": 3, "f": [[]]})", "s");
  EXPECT_EQ(rd.next(), json_event::begin_object);
  EXPECT_EQ(rd.next(), json_event::key);
  EXPECT_EQ(rd.next(), json_event::begin_object);
  rd.skip();
  EXPECT_EQ(rd.depth(), 1u);
  EXPECT_EQ(rd.next(), json_event::key);
  EXPECT_EQ(rd.string(), "e");
  EXPECT_EQ(rd.next(), json_event::number);
  rd.skip();  // a scalar: nothing more to read
  EXPECT_EQ(rd.next(), json_event::key);
  EXPECT_EQ(rd.next(), json_event::begin_array);
  rd.skip();
  EXPECT_EQ(rd.next(), json_event::end_object);
  EXPECT_EQ(rd.next(), json_event::end);
  EXPECT_EQ(rd.next(), json_event::end);
  // What is skipped is still checked.
  json_reader bad(R"({"a": [1, "\x"], "b": 2})", "s");
  bad.next();
  bad.next();
  bad.next();
  EXPECT_THROW(bad.skip(), parse_error);
}

TEST(JsonReader, LinesOfAJsonLinesFile) {
  json_reader_options options;
  options.first_line = 7;
  json_reader rd("{\"a\": 1}", "t.jsonl", options);
  EXPECT_EQ(rd.next(), json_event::begin_object);
  EXPECT_EQ(rd.next(), json_event::key);
  EXPECT_EQ(rd.next(), json_event::number);
  try {
    rd.fail(rd.offset(), "\"a\" must be a string");
    FAIL();
  } catch (const parse_error& e) {
    EXPECT_EQ(std::string(e.what()), "t.jsonl:7:7: \"a\" must be a string");
  }
  const std::string next_line = "  [true,, 1]";
  rd.reset(next_line, 8);
  EXPECT_EQ(rd.next(), json_event::begin_array);
  EXPECT_EQ(rd.depth(), 1u);
  EXPECT_EQ(rd.next(), json_event::boolean);
  try {
    rd.next();
    FAIL();
  } catch (const parse_error& e) {
    EXPECT_EQ(std::string(e.what()), "t.jsonl:8:9: expected a value");
  }
}

}  // namespace
}  // namespace keel
