#include "keel/core/config_string.hpp"

#include <gtest/gtest.h>

#include <array>

#include "keel/core/error.hpp"

namespace keel {
namespace {

constexpr std::array<std::string_view, 4> k_keys{"max_split_size_mb",
                                                 "garbage_collection_threshold",
                                                 "roundup_power2_divisions", "expandable_segments"};

std::string error_of(std::string_view text) {
  try {
    config_string::parse(text, k_keys, "PYTORCH_CUDA_ALLOC_CONF");
  } catch (const invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(ConfigString, ParsesScalarsAndLists) {
  const auto c = config_string::parse(
      "max_split_size_mb:256,garbage_collection_threshold:0.8,expandable_segments:True,"
      "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
      k_keys);
  ASSERT_EQ(c.items().size(), 4u);
  EXPECT_EQ(c.find("max_split_size_mb")->value, "256");
  EXPECT_EQ(c.find("garbage_collection_threshold")->value, "0.8");
  EXPECT_TRUE(config_bool(*c.find("expandable_segments")));
  const config_item* list = c.find("roundup_power2_divisions");
  ASSERT_TRUE(list->is_list);
  ASSERT_EQ(list->list.size(), 4u);
  EXPECT_EQ(list->list[0].key, "256");
  EXPECT_EQ(*list->list[0].value, "1");
  EXPECT_EQ(list->list[3].key, ">");
  EXPECT_EQ(*list->list[3].value, "8");
  EXPECT_EQ(c.find("nothing"), nullptr);
}

TEST(ConfigString, SpacesEmptyAndBareLists) {
  EXPECT_TRUE(config_string::parse("", k_keys).items().empty());
  EXPECT_TRUE(config_string::parse("   ", k_keys).items().empty());
  const auto c =
      config_string::parse(" max_split_size_mb : 64 , roundup_power2_divisions:[1, 2,4] ", k_keys);
  EXPECT_EQ(c.find("max_split_size_mb")->value, "64");
  const config_item* list = c.find("roundup_power2_divisions");
  ASSERT_EQ(list->list.size(), 3u);
  EXPECT_FALSE(list->list[1].value.has_value());
  EXPECT_EQ(list->list[2].key, "4");
  EXPECT_TRUE(config_string::parse("roundup_power2_divisions:[]", k_keys)
                  .find("roundup_power2_divisions")
                  ->list.empty());
}

TEST(ConfigString, UnknownKeyListsTheValidOnes) {
  const std::string e = error_of("max_split_size:256");
  EXPECT_NE(e.find("PYTORCH_CUDA_ALLOC_CONF"), std::string::npos);
  EXPECT_NE(e.find("unknown key 'max_split_size'"), std::string::npos);
  EXPECT_NE(e.find("valid keys: max_split_size_mb, garbage_collection_threshold, "
                   "roundup_power2_divisions, expandable_segments"),
            std::string::npos);
}

TEST(ConfigString, SyntaxErrorsSayWhere) {
  EXPECT_NE(error_of("max_split_size_mb").find("expected ':' after key 'max_split_size_mb'"),
            std::string::npos);
  EXPECT_NE(error_of("max_split_size_mb:").find("expected a value for 'max_split_size_mb'"),
            std::string::npos);
  EXPECT_NE(error_of("roundup_power2_divisions:[256:1,>:8")
                .find("expected ']' to close the list of 'roundup_power2_divisions'"),
            std::string::npos);
  EXPECT_NE(error_of("max_split_size_mb:1 expandable_segments:True").find("between items"),
            std::string::npos);
  EXPECT_NE(error_of("max_split_size_mb:1,,").find("expected a key"), std::string::npos);
  EXPECT_NE(error_of("max_split_size_mb:1,max_split_size_mb:2").find("given twice"),
            std::string::npos);
  EXPECT_NE(error_of("roundup_power2_divisions:[256:]").find("expected a value after '256:'"),
            std::string::npos);
}

TEST(ConfigString, TypedAccessorsNameKeyValueAndRange) {
  const auto c = config_string::parse(
      "max_split_size_mb:12,garbage_collection_threshold:1.5,expandable_segments:maybe,"
      "roundup_power2_divisions:[1]",
      k_keys, "KEEL_ALLOC_CONF");
  try {
    config_uint(*c.find("max_split_size_mb"), 20, 1u << 30, c.origin());
    FAIL();
  } catch (const invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "KEEL_ALLOC_CONF: invalid value '12' for max_split_size_mb: expected an "
                 "integer in [20, 1073741824]");
  }
  try {
    config_double(*c.find("garbage_collection_threshold"), 0, 1, true, true, c.origin());
    FAIL();
  } catch (const invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "KEEL_ALLOC_CONF: invalid value '1.5' for garbage_collection_threshold: "
                 "expected a number in (0, 1)");
  }
  EXPECT_THROW(config_bool(*c.find("expandable_segments")), invalid_argument);
  EXPECT_THROW(config_word(*c.find("roundup_power2_divisions")), invalid_argument);
  EXPECT_EQ(config_uint(*c.find("max_split_size_mb"), 0, 100), 12u);
}

}  // namespace
}  // namespace keel
