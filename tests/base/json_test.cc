#include "base/json.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace ae {
namespace {

std::string Nested(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(JsonTest, NestingIsBoundedWithAClearError) {
  EXPECT_TRUE(ParseJson(Nested(kMaxJsonDepth)).ok());
  Result<rapidjson::Document> deep = ParseJson(Nested(100000), "function arguments");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.message(),
            "function arguments is not valid JSON (offset 512: nested deeper than 512 levels)");
  // A million levels (2 MB): refused, not a stack overflow.
  EXPECT_FALSE(ParseJson(Nested(1000000)).ok());
  // Brackets inside strings do not count.
  EXPECT_TRUE(ParseJson("[\"" + std::string(5000, '[') + "\"]").ok());
}

TEST(JsonTest, SizeBound) {
  EXPECT_EQ(ParseJson("[1,2,3]", "event", 4).message(), "event is too large (7 bytes, at most 4)");
  EXPECT_TRUE(ParseJson("[1,2,3]", "event", 7).ok());
}

TEST(JsonTest, NumbersAJsonTextCannotHoldBecomeStrings) {
  Result<rapidjson::Document> doc = ParseJson(R"({"a":1.8e308,"b":-1.8e308,"c":[1.5,2]})");
  ASSERT_TRUE(doc.ok()) << doc.message();
  EXPECT_EQ(ToJson(*doc), R"({"a":"Infinity","b":"-Infinity","c":[1.5,2]})");
  JsonWriter w;
  w.StartArray();
  w.Double(std::numeric_limits<double>::quiet_NaN());
  w.Double(0.25);
  w.EndArray();
  EXPECT_EQ(*w.Take(), R"(["NaN",0.25])");
}

TEST(JsonTest, StringsAndKeysAreValidUtf8) {
  JsonWriter w;
  w.StartObject();
  w.Key("k\xff");
  w.String("a\xc3(b");
  w.EndObject();
  EXPECT_EQ(*w.Take(), "{\"k\xEF\xBF\xBD\":\"a\xEF\xBF\xBD(b\"}");
  Result<rapidjson::Document> raw = ParseJson("{\"x\":\"\xff\"}");  // parsed leniently
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(ToJson(*raw), "{\"x\":\"\xEF\xBF\xBD\"}");
}

TEST(JsonTest, RawIsVerbatimOnlyWhenValidCompactAndFinite) {
  auto raw = [](std::string_view text, bool* was_json = nullptr) {
    JsonWriter w;
    w.StartArray();
    bool ok = w.Raw(text);
    if (was_json) *was_json = ok;
    w.EndArray();
    return *w.Take();
  };
  EXPECT_EQ(raw(R"({"a":[1,"x"]})"), R"([{"a":[1,"x"]}])");
  EXPECT_EQ(raw("{\"a\": 1,\n \"b\": 2}"), R"([{"a":1,"b":2}])");  // one line, compact
  EXPECT_EQ(raw(R"({"a":1.8e308})"), R"([{"a":"Infinity"}])");
  EXPECT_EQ(raw("{\"a\":\"\xff\"}"), "[{\"a\":\"\xEF\xBF\xBD\"}]");
  bool was_json = true;
  EXPECT_EQ(raw(R"({"a":,})", &was_json), R"(["{\"a\":,}"])");
  EXPECT_FALSE(was_json);
  std::string deep = raw(Nested(100000), &was_json);
  EXPECT_FALSE(was_json);
  EXPECT_EQ(deep.size(), 200000u + 4u);  // a string: ["[[[…]]]"]
  // RapidJSON reads a NUL as the end of its input; verbatim, the tail would follow raw.
  EXPECT_EQ(raw(std::string("{}\0\"x", 5), &was_json), R"(["{}\u0000\"x"])");
  EXPECT_FALSE(was_json);
}

// Nothing but one value may be copied: a UTF-8 BOM before it, or a stray byte (a lone 0xEF, which
// a BOM probe would swallow) before a number, would reach our output raw and break the line.
TEST(JsonTest, RawIsNeverVerbatimWithABomOrAStrayByteBeforeTheValue) {
  auto raw = [](std::string_view text, bool* was_json) {
    JsonWriter w;
    w.StartArray();
    *was_json = w.Raw(text);
    w.EndArray();
    return *w.Take();
  };
  bool was_json = false;
  // A BOM is not JSON whitespace (RFC 8259): the text is quoted as a string, made valid UTF-8.
  EXPECT_EQ(raw("\xEF\xBB\xBF{}", &was_json), "[\"\xEF\xBB\xBF{}\"]");
  EXPECT_FALSE(was_json);
  EXPECT_EQ(raw("\xEF"
                "1",
                &was_json),
            "[\"\xEF\xBF\xBD"
            "1\"]");
  EXPECT_FALSE(was_json);
  EXPECT_EQ(raw("\xEF\xBB"
                "1",
                &was_json),
            "[\"\xEF\xBF\xBD\xEF\xBF\xBD"
            "1\"]");
  EXPECT_FALSE(was_json);
  EXPECT_EQ(raw("1\xEF", &was_json), "[\"1\xEF\xBF\xBD\"]");
  EXPECT_FALSE(was_json);
  EXPECT_EQ(raw("1", &was_json), "[1]");
  EXPECT_TRUE(was_json);
}

TEST(JsonTest, ANulByteIsAnErrorNotTheEndOfTheText) {
  Result<rapidjson::Document> doc = ParseJson(std::string("{\"a\":1}\0{\"b\":2}", 15), "arguments");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.message(),
            "arguments is not valid JSON (offset 7: a NUL byte is not allowed in JSON text)");
  EXPECT_FALSE(ParseJson(std::string("[\"a\0b\"]", 7)).ok());
}

TEST(JsonTest, SerialisingADeepValueBuiltInCodeDoesNotRecurse) {
  rapidjson::Document doc;
  doc.SetArray();
  rapidjson::Value* v = &doc;
  for (int i = 0; i < 200000; ++i) {
    v->PushBack(rapidjson::Value(rapidjson::kArrayType), doc.GetAllocator());
    v = &(*v)[0];
  }
  std::string out = ToJson(doc);
  EXPECT_EQ(out, Nested(200001));
}

TEST(JsonTest, ParseErrorsKeepRapidJsonsWording) {
  rapidjson::Document doc;
  std::optional<JsonParseError> e = ParseJsonInto(R"({"a" 1})", &doc);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->offset, 5u);
  EXPECT_EQ(e->reason, "Missing a colon after a name of object member.");
  EXPECT_EQ(ParseJsonObject("[1]", "schema").message(), "schema must be a JSON object");
}

}  // namespace
}  // namespace ae
