#include "keel/core/enum_names.hpp"

#include <gtest/gtest.h>

#include <string>

namespace keel {
namespace {

enum class color { red, green, blue, unlisted };

constexpr enum_entry<color> k_entries[] = {
    {color::red, "red"}, {color::green, "green"}, {color::blue, "blue"}, {color::red, "crimson"}};
constexpr enum_names<color> k_names{"color", k_entries, name_case::exact, "?"};
constexpr enum_names<color> k_loose{"color", k_entries, name_case::ignore};

TEST(EnumNames, NamesAreTheFirstEntryAndAliasesParse) {
  static_assert(k_names.name(color::green) == "green");
  EXPECT_EQ(k_names.name(color::red), "red");  // not the alias
  EXPECT_EQ(k_names.name(color::unlisted), "?");
  EXPECT_EQ(k_loose.name(color::unlisted), "unknown");
  EXPECT_EQ(k_names.parse("crimson"), color::red);
  EXPECT_EQ(k_names.parse("blue"), color::blue);
  for (const enum_entry<color>& e : k_names.entries()) EXPECT_EQ(k_names.parse(e.name), e.value);
}

TEST(EnumNames, CaseIsMatchedAsTheTableSays) {
  EXPECT_FALSE(k_names.find("RED").has_value());
  EXPECT_EQ(k_loose.parse("GrEeN"), color::green);
  EXPECT_FALSE(k_loose.find("gree").has_value());
  EXPECT_FALSE(k_loose.find("").has_value());
}

TEST(EnumNames, AnUnknownNameListsTheCanonicalNamesOnly) {
  EXPECT_EQ(k_names.expected(), "red, green or blue");
  try {
    k_names.parse("mauve");
    FAIL() << "parsed";
  } catch (const invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "unknown color 'mauve': expected red, green or blue");
  }
}

}  // namespace
}  // namespace keel
