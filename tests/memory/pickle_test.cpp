#include "keel/memory/pickle.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "keel/core/error.hpp"

namespace keel::memory::pickle {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string fixture(const std::string& name) {
  return slurp(std::string(KEEL_SOURCE_DIR) + "/tests/data/memory/" + name);
}

document parse_string(const std::string& bytes, const limits& lim = {}) {
  return parse(std::as_bytes(std::span(bytes.data(), bytes.size())), "<test>", lim);
}

// The parse_error of parsing `bytes`; fails the test when parsing succeeds.
parse_error error_of(const std::string& bytes, const limits& lim = {}) {
  try {
    parse_string(bytes, lim);
  } catch (const parse_error& e) {
    return e;
  }
  ADD_FAILURE() << "no parse_error";
  return parse_error::at_offset("", 0, "");
}

std::string proto4(const std::string& body) { return std::string("\x80\x04", 2) + body; }

// --- the values Python wrote (tests/memory/make_pickle_fixtures.py) ---

void check_values(const document& doc, bool with_bytes) {
  const value root = doc.root();
  ASSERT_TRUE(root.is(kind::dict));
  EXPECT_TRUE(root.get("none")->is(kind::none));
  EXPECT_TRUE(root.get("true")->as_bool());
  EXPECT_FALSE(root.get("false")->as_bool());
  const value ints = *root.get("ints");
  ASSERT_EQ(ints.size(), 16u);
  const std::int64_t expected[] = {
      0,    1,          255,           256,          65535,         65536,     -1,
      -256, 2147483647, -2147483648LL, 2147483648LL, -2147483649LL, INT64_MAX, INT64_MIN};
  for (std::size_t i = 0; i < std::size(expected); ++i)
    EXPECT_EQ(ints[i].as_int(), expected[i]) << i;
  EXPECT_TRUE(ints[14].is_big_unsigned());
  EXPECT_EQ(ints[14].as_uint64(), std::uint64_t{1} << 63);
  EXPECT_EQ(ints[15].as_uint64(), UINT64_MAX);
  EXPECT_THROW(ints[15].as_int(), keel::invalid_argument);
  EXPECT_THROW(ints[6].as_uint64(), keel::invalid_argument);
  EXPECT_DOUBLE_EQ(root.get("float")->as_double(), 0.8);
  EXPECT_DOUBLE_EQ(root.get("neg_float")->as_double(), -1.5e-300);
  EXPECT_EQ(root.get("str")->as_string(),
            "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9d\x94\x98");
  EXPECT_EQ(root.get("empty_str")->as_string(), "");
  EXPECT_EQ(root.get("long_str")->as_string(), std::string(300, 'x'));
  if (with_bytes) {
    ASSERT_TRUE(root.get("bytes")->is(kind::bytes));
    EXPECT_EQ(root.get("bytes")->as_string(), std::string("\x00\x01\xff", 3));
  }
  const value tuple = *root.get("tuple");
  ASSERT_TRUE(tuple.is(kind::tuple));
  EXPECT_EQ(tuple.size(), 3u);
  EXPECT_EQ(tuple[1].as_string(), "two");
  EXPECT_EQ(root.get("pair")->size(), 2u);
  const value empty = *root.get("empty");
  EXPECT_TRUE(empty[0].is(kind::list));
  EXPECT_TRUE(empty[1].is(kind::dict));
  EXPECT_TRUE(empty[2].is(kind::tuple));
  EXPECT_EQ(empty[0].size() + empty[1].size() + empty[2].size(), 0u);
  const value c = *(*(*root.get("nested")->get("a"))[0].get("b"))[2].get("c");
  EXPECT_TRUE(c.is(kind::none));
  // The memo keeps shared objects shared.
  const value shared = *root.get("shared");
  EXPECT_EQ(shared[0].id(), shared[1].id());
  EXPECT_EQ(shared[1].id(), shared[2].id());
  EXPECT_EQ(shared[0][0].as_string(), "shared");
  // Batches of APPENDS / SETITEMS (1000 per batch) are joined.
  const value big = *root.get("big_list");
  ASSERT_EQ(big.size(), 2500u);
  for (std::size_t i = 0; i < 2500; ++i) ASSERT_EQ(big[i].as_int(), static_cast<std::int64_t>(i));
  const value dict = *root.get("big_dict");
  ASSERT_EQ(dict.size(), 1200u);
  EXPECT_EQ(dict.get("1199")->as_int(), 1199);
  EXPECT_EQ(dict.key(7).as_string(), "7");
  EXPECT_FALSE(dict.get("1200").has_value());
}

TEST(PickleRead, EveryProtocolFromPython) {
  for (const int proto : {2, 3, 4, 5}) {
    SCOPED_TRACE(proto);
    const std::string bytes = fixture("values_p" + std::to_string(proto) + ".pickle");
    ASSERT_FALSE(bytes.empty());
    check_values(parse_string(bytes), proto != 2);
  }
}

TEST(PickleRead, EveryTruncationIsAParseError) {
  const std::string bytes = fixture("values_p4.pickle");
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      parse_string(bytes.substr(0, n));
      FAIL() << "prefix of " << n << " bytes parsed";
    } catch (const parse_error& e) {
      ASSERT_LE(e.offset(), n);
    }
  }
}

// --- refused and unsupported opcodes ---

TEST(PickleRead, RefusesEveryObjectConstructingOpcode) {
  struct refused {
    std::string op;
    const char* name;
  };
  const refused cases[] = {
      {"c", "GLOBAL"},    {"\x93", "STACK_GLOBAL"},
      {"R", "REDUCE"},    {"b", "BUILD"},
      {"i", "INST"},      {"o", "OBJ"},
      {"\x81", "NEWOBJ"}, {"\x92", "NEWOBJ_EX"},
      {"\x82", "EXT1"},   {"\x83", "EXT2"},
      {"\x84", "EXT4"},   {"P", "PERSID"},
      {"Q", "BINPERSID"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    // Some plain values first, so the offset is not trivially 2.
    const std::string bytes = proto4(std::string("N\x88", 2) + c.op + "os\nsystem\n.");
    const parse_error e = error_of(bytes);
    EXPECT_EQ(e.offset(), 4u);
    EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("byte 4"), std::string::npos) << e.what();
  }
}

TEST(PickleRead, RefusesGlobalsPythonWrote) {
  const parse_error p2 = error_of(fixture("evil_global_p2.pickle"));
  EXPECT_NE(std::string(p2.what()).find("GLOBAL"), std::string::npos) << p2.what();
  const parse_error p4 = error_of(fixture("evil_reduce_p4.pickle"));
  EXPECT_NE(std::string(p4.what()).find("STACK_GLOBAL"), std::string::npos) << p4.what();
  EXPECT_EQ(p4.offset(), 45u);  // pickletools.dis places STACK_GLOBAL at byte 45
}

TEST(PickleRead, RefusesSetsBuffersAndTextOpcodes) {
  for (const std::string op : {"\x8f", "\x91", "\x97", "\x98", "I", "F", "L", "S", "V", "g", "p"}) {
    const parse_error e = error_of(proto4(op + "0\n."));
    EXPECT_NE(std::string(e.what()).find("unsupported"), std::string::npos) << e.what();
  }
  EXPECT_NE(std::string(error_of(proto4("\xff.")).what()).find("unknown opcode 0xff"),
            std::string::npos);
  EXPECT_NE(std::string(error_of("\x80\x06N.").what()).find("protocol 6"), std::string::npos);
}

// --- hostile structure ---

TEST(PickleRead, DepthBombStopsAtTheLimit) {
  const std::size_t n = 200000;
  const std::string bytes = proto4(std::string(n, '(') + std::string(n, 'l') + ".");
  const parse_error e = error_of(bytes);
  EXPECT_NE(std::string(e.what()).find("nesting deeper than 100"), std::string::npos) << e.what();
  // Just inside the limit parses.
  const std::string ok = proto4(std::string(100, '(') + std::string(100, 'l') + ".");
  EXPECT_NO_THROW(parse_string(ok));
  limits tight;
  tight.max_depth = 10;
  EXPECT_THROW(parse_string(ok, tight), parse_error);
}

TEST(PickleRead, HugeLengthClaimsAllocateNothing) {
  const char* cases[] = {
      "\x8d\xff\xff\xff\xff\xff\xff\xff\x7f",  // BINUNICODE8 of 2^63 bytes
      "X\xff\xff\xff\xff",                     // BINUNICODE of 4 GiB
      "\x8e\x00\x00\x00\x00\x00\x00\x01\x00",  // BINBYTES8
      "\x96\x00\x00\x00\x00\x00\x00\x01\x00",  // BYTEARRAY8
      "\x8b\xff\xff\xff\x7f",                  // LONG4 of 2 GiB
      "\x95\xff\xff\xff\xff\xff\xff\xff\xff",  // FRAME
  };
  for (const char* c : cases) {
    const std::string body(c, c[0] == 'X' || c[0] == '\x8b' ? 5 : 9);
    const parse_error e = error_of(proto4(body + "abc."));
    EXPECT_EQ(e.offset(), 2u) << e.what();
    EXPECT_NE(std::string(e.what()).find("remain"), std::string::npos) << e.what();
  }
  // A string within the input but over the configured limit.
  limits small;
  small.max_string_length = 4;
  EXPECT_NE(
      std::string(error_of(proto4("\x8c\x05hello."), small).what()).find("longer than the limit"),
      std::string::npos);
  // Memo indices beyond the input would only grow the memo table.
  EXPECT_NE(std::string(error_of(proto4("Nr\xf0\xff\xff\x0f.")).what()).find("memo index"),
            std::string::npos);
  EXPECT_NE(std::string(error_of(proto4("h\x05.")).what()).find("never stored"), std::string::npos);
}

TEST(PickleRead, ElementLimit) {
  limits small;
  small.max_elements = 50;
  std::string body = "(";
  for (int i = 0; i < 60; ++i) body += "N";
  body += "l.";
  EXPECT_NE(std::string(error_of(proto4(body), small).what()).find("limit"), std::string::npos);
  EXPECT_NO_THROW(parse_string(proto4(body)));
}

TEST(PickleRead, RecursiveStructuresAreRefused) {
  // l = []; l.append(l)
  EXPECT_NE(std::string(error_of(proto4(std::string("]\x94h\x00"
                                                    "a.",
                                                    6)))
                            .what())
                .find("contain itself"),
            std::string::npos);
  // a = []; b = [a]; a.append(b): modifying a list that is already nested.
  EXPECT_NE(std::string(error_of(proto4(std::string("]\x94]\x94h\x00"
                                                    "aa.",
                                                    9)))
                            .what())
                .find("after it was put inside"),
            std::string::npos);
}

TEST(PickleRead, SharedReferencesStayShared) {
  // x = [None]; then 40 levels of [prev, prev]: 2^40 leaves if expanded, 41 lists here.
  std::string body =
      "]\x94N"
      "a0";  // memo 0 = [None]
  for (int i = 0; i < 40; ++i) {
    body += "h";
    body += static_cast<char>(i);
    body += "h";
    body += static_cast<char>(i);
    body += "\x86";  // TUPLE2 of the previous level twice
    body += "\x94";  // memo i + 1
    body += "0";     // pop it; the memo holds it
  }
  body += "h";
  body += static_cast<char>(40);
  body += ".";
  const document doc = parse_string(proto4(body));
  EXPECT_LT(doc.node_count(), 100u);
  value v = doc.root();
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].id(), v[1].id());
    v = v[0];
  }
}

TEST(PickleRead, StackDiscipline) {
  EXPECT_THROW(parse_string(proto4("NN.")), parse_error);      // two values at STOP
  EXPECT_THROW(parse_string(proto4(".")), parse_error);        // none
  EXPECT_THROW(parse_string(proto4("(N.")), parse_error);      // open MARK
  EXPECT_THROW(parse_string(proto4("Na.")), parse_error);      // APPEND to None
  EXPECT_THROW(parse_string(proto4("}(NNNu.")), parse_error);  // odd SETITEMS
  EXPECT_THROW(parse_string(proto4("}]N\x86.")),
               parse_error);  // TUPLE2 is fine, but two values remain
  EXPECT_THROW(parse_string(proto4("}](Nu.")), parse_error);  // SETITEMS onto a list
  EXPECT_THROW(parse_string(proto4("}]Ns.")), parse_error);   // list as a dict key
  EXPECT_THROW(parse_string(proto4("e.")), parse_error);      // APPENDS without MARK
  // POP / POP_MARK / DUP are plain stack operations.
  const document d = parse_string(proto4("(NNN1N2\x86."));
  EXPECT_EQ(d.root().size(), 2u);
  // Trailing bytes after STOP are ignored, as pickle.load does.
  EXPECT_TRUE(parse_string(proto4("N.garbage")).root().is(kind::none));
}

TEST(PickleRead, WideIntegers) {
  // LONG1 of 9 bytes: 2^64 - 1 fits (unsigned), 2^64 does not.
  const document d =
      parse_string(proto4(std::string("\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00.", 12)));
  EXPECT_EQ(d.root().as_uint64(), UINT64_MAX);
  const parse_error e =
      error_of(proto4(std::string("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", 12)));
  EXPECT_NE(std::string(e.what()).find("64 bits"), std::string::npos);
  // Non-minimal encodings of small values are fine.
  EXPECT_EQ(parse_string(proto4(std::string(
                             "\x8a\x0c\xfe\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff.", 15)))
                .root()
                .as_int(),
            -2);
  EXPECT_EQ(parse_string(proto4(std::string("\x8a\x00.", 3))).root().as_int(), 0);
  EXPECT_EQ(parse_string(proto4(std::string("\x8b\x02\x00\x00\x00\x00\x80.", 8))).root().as_int(),
            -32768);
}

TEST(PickleRead, InvalidUtf8IsRefused) {
  EXPECT_NE(std::string(error_of(proto4("\x8c\x02\xc3\x28.")).what()).find("UTF-8"),
            std::string::npos);
  // bytes may hold anything
  EXPECT_NO_THROW(parse_string(proto4("C\x02\xc3\x28.")));
}

// --- writer ---

TEST(PickleWrite, RoundTripsThroughTheReader) {
  std::ostringstream out;
  writer w(out);
  w.begin_dict();
  w.string("ints");
  w.begin_list();
  for (std::int64_t v :
       {std::int64_t{0}, std::int64_t{255}, std::int64_t{256}, std::int64_t{65536},
        std::int64_t{-1}, std::int64_t{-129}, INT64_MIN, INT64_MAX, std::int64_t{1} << 40})
    w.integer(v);
  w.unsigned_integer(UINT64_MAX);
  w.unsigned_integer(std::uint64_t{1} << 63);
  w.end_list();
  w.string("many");
  w.begin_list();
  for (int i = 0; i < 2345; ++i) w.integer(i);
  w.end_list();
  w.string("dict");
  w.begin_dict();
  for (int i = 0; i < 1500; ++i) {
    w.string("k" + std::to_string(i));
    w.integer(i);
  }
  w.end_dict();
  w.string("shared");
  w.begin_tuple();
  w.string("x");
  w.floating(0.25);
  w.none();
  w.boolean(true);
  w.bytes(std::string("\x00\xff", 2));
  w.end_tuple();
  const std::uint32_t memo = w.memoize();
  w.string("again");
  w.get(memo);
  w.end_dict();
  w.finish();

  const document d = parse_string(out.str());
  const value root = d.root();
  const value ints = *root.get("ints");
  ASSERT_EQ(ints.size(), 11u);
  EXPECT_EQ(ints[5].as_int(), -129);
  EXPECT_EQ(ints[6].as_int(), INT64_MIN);
  EXPECT_EQ(ints[7].as_int(), INT64_MAX);
  EXPECT_EQ(ints[8].as_int(), std::int64_t{1} << 40);
  EXPECT_EQ(ints[9].as_uint64(), UINT64_MAX);
  EXPECT_EQ(ints[10].as_uint64(), std::uint64_t{1} << 63);
  ASSERT_EQ(root.get("many")->size(), 2345u);
  EXPECT_EQ((*root.get("many"))[2344].as_int(), 2344);
  ASSERT_EQ(root.get("dict")->size(), 1500u);
  EXPECT_EQ(root.get("dict")->get("k1499")->as_int(), 1499);
  EXPECT_EQ(root.get("shared")->id(), root.get("again")->id());
  EXPECT_DOUBLE_EQ((*root.get("shared"))[1].as_double(), 0.25);
  EXPECT_EQ((*root.get("shared"))[4].as_string(), std::string("\x00\xff", 2));
}

TEST(PickleWrite, ChecksBalance) {
  std::ostringstream out;
  writer w(out);
  w.begin_list();
  EXPECT_THROW(w.finish(), keel::invalid_argument);
  EXPECT_THROW(w.end_dict(), keel::invalid_argument);
}

// --- JSON onto the same tree ---

TEST(JsonRead, ValuesAndEscapes) {
  const document d = parse_json(
      R"( {"a": [1, -2, 18446744073709551615, 1.5e3, true, false, null],
           "s": "q\"\\\/\b\f\n\r\t\u00e9\ud834\udd1e", "e": {}, "l": []} )",
      "<json>");
  const value a = *d.root().get("a");
  EXPECT_EQ(a[0].as_int(), 1);
  EXPECT_EQ(a[1].as_int(), -2);
  EXPECT_EQ(a[2].as_uint64(), UINT64_MAX);
  EXPECT_TRUE(a[3].is(kind::floating));
  EXPECT_DOUBLE_EQ(a[3].as_double(), 1500.0);
  EXPECT_TRUE(a[4].as_bool());
  EXPECT_TRUE(a[6].is(kind::none));
  EXPECT_EQ(d.root().get("s")->as_string(), "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9d\x84\x9e");
  EXPECT_EQ(d.root().get("e")->size(), 0u);
}

TEST(JsonRead, ErrorsCarryLineAndColumn) {
  try {
    parse_json("{\n  \"a\": [1,\n  2,,]\n}", "f.json");
    FAIL();
  } catch (const parse_error& e) {
    EXPECT_EQ(e.line(), 3u);
    EXPECT_EQ(e.column(), 5u);
    EXPECT_NE(std::string(e.what()).find("f.json:3:5"), std::string::npos) << e.what();
  }
  for (const char* bad :
       {"", "[", "{\"a\"}", "[01]", "\"abc", "[1] x", "{\"a\":1,}", "[\"\\x\"]", "nul"})
    EXPECT_THROW(parse_json(bad, "j"), parse_error) << bad;
  EXPECT_THROW(parse_json(std::string(100000, '['), "j"), parse_error);
}

}  // namespace
}  // namespace keel::memory::pickle
