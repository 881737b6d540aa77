#include "base/utf8.h"

#include <gtest/gtest.h>

namespace ae {
namespace {

TEST(Utf8Test, ValidAndInvalid) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x9C"));          // truncated
}

TEST(Utf8Test, FirstInvalidOffset) {
  EXPECT_EQ(FirstInvalidUtf8("ok \xE2\x9C\x93"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("ab\xFF"), 2u);
  EXPECT_EQ(FirstInvalidUtf8("a\xE2\x9C"), 1u);
}

TEST(Utf8Test, SanitizeReplacesEachBadByte) {
  EXPECT_EQ(SanitizeUtf8("a\xFF"
                         "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(SanitizeUtf8("\xE2\x9C"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(SanitizeUtf8("ok \xE2\x9C\x93"), "ok \xE2\x9C\x93");
  EXPECT_TRUE(IsValidUtf8(SanitizeUtf8(std::string("\x00\x80\xBF\xC2", 4))));
}

TEST(Utf8Test, CutsLandOnCharacterBoundaries) {
  std::string s =
      "a\xE2\x9C\x93"
      "b";  // a ✓ b
  EXPECT_EQ(Utf8PrefixLength(s, 0), 0u);
  EXPECT_EQ(Utf8PrefixLength(s, 1), 1u);
  EXPECT_EQ(Utf8PrefixLength(s, 2), 1u);
  EXPECT_EQ(Utf8PrefixLength(s, 3), 1u);
  EXPECT_EQ(Utf8PrefixLength(s, 4), 4u);
  EXPECT_EQ(Utf8PrefixLength(s, 99), 5u);
  EXPECT_EQ(Utf8SuffixStart(s, 2), 4u);
  EXPECT_EQ(Utf8SuffixStart(s, 1), 1u);
  EXPECT_EQ(Utf8SuffixStart(s, 5), 5u);
}

}  // namespace
}  // namespace ae
