#include "keel/core/xml_escape.hpp"

#include <gtest/gtest.h>

namespace keel {
namespace {

TEST(XmlEscape, ReplacesTheFourMarkupCharacters) {
  EXPECT_EQ(xml_escape(R"(a<b>&"c")"), "a&lt;b&gt;&amp;&quot;c&quot;");
}

TEST(XmlEscape, LeavesOtherTextAndUtf8Alone) {
  EXPECT_EQ(xml_escape("layer.0 attn — 1.5 GiB 'x'"), "layer.0 attn — 1.5 GiB 'x'");
  EXPECT_EQ(xml_escape(""), "");
}

}  // namespace
}  // namespace keel
