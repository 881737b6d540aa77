// --output-schema: the strict structured-output rules at start-up (each refusal names the JSON
// pointer and the rule) and the validation of the final answer at the end.
#include "engine/output_schema/output_schema.h"

#include <gtest/gtest.h>

namespace ae {
namespace {

std::string Check(const std::string& schema) {
  Status ok = CheckStrictOutputSchema(schema);
  return ok.ok() ? "" : ok.message();
}

TEST(OutputSchemaTest, AStrictSchemaPasses) {
  EXPECT_EQ(
      Check(R"({"type":"object","properties":{"a":{"type":"string"},)"
            R"("n":{"type":["integer","null"],"minimum":0},)"
            R"("tags":{"type":"array","items":{"enum":["x","y"]},"maxItems":3},)"
            R"("kind":{"anyOf":[{"const":"k"},{"$ref":"#/$defs/p"}]}},)"
            R"("required":["a","n","tags","kind"],"additionalProperties":false,)"
            R"("$defs":{"p":{"type":"object","properties":{},"additionalProperties":false}}})"),
      "");
}

TEST(OutputSchemaTest, EachRuleNamesThePointer) {
  EXPECT_EQ(Check(R"({"type":"objekt"})"),
            "#/type: unknown type \"objekt\" (expected one of: string, number, integer, boolean, "
            "object, array, null)");
  EXPECT_EQ(Check(R"({"type":"string"})"), "#: the root schema must have \"type\": \"object\"");
  EXPECT_EQ(Check(R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]})"),
            "#: every object needs \"additionalProperties\": false");
  EXPECT_EQ(Check(R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},)"
                  R"("required":["a"],"additionalProperties":false})"),
            "#/properties/b: every property must be listed in \"required\" (\"b\" is not)");
  EXPECT_EQ(Check(R"({"type":"object","properties":{"a":{"type":"string","minLength":2}},)"
                  R"("required":["a"],"additionalProperties":false})"),
            "#/properties/a/minLength: keyword \"minLength\" is not supported by strict "
            "structured output");
  EXPECT_EQ(Check(R"({"type":"object","properties":{"o":{"type":"object","properties":{}}},)"
                  R"("required":["o"],"additionalProperties":false})"),
            "#/properties/o: every object needs \"additionalProperties\": false");
  EXPECT_EQ(Check(R"({"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}},)"
                  R"("required":["a"],"additionalProperties":false})"),
            "#/properties/a/$ref: reference \"#/$defs/missing\" does not resolve");
  EXPECT_EQ(
      Check(R"({"type":"object","properties":{"a/b":{}},)"
            R"("required":["a/b"],"additionalProperties":false})"),
      "#/properties/a~1b: a schema needs \"type\", \"enum\", \"const\", \"anyOf\" or \"$ref\"");
  EXPECT_EQ(Check(R"({"type":"object","properties":{},"required":["x"],)"
                  R"("additionalProperties":false})"),
            "#/required/0: \"x\" is required but not in \"properties\"");
  EXPECT_EQ(Check(R"({"type":"object","properties":{"s":{"type":"string","pattern":"(["}},)"
                  R"("required":["s"],"additionalProperties":false})"),
            "#/properties/s/pattern: is not a valid regular expression");
  EXPECT_EQ(Check("[1]"), "#: a schema must be a JSON object");
}

TEST(OutputSchemaTest, TheAnswerIsValidated) {
  auto v = OutputSchemaValidator::Make(
      R"({"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":0},)"
      R"("k":{"const":"yes"}},"required":["n","k"],"additionalProperties":false})");
  ASSERT_TRUE(v.ok()) << v.message();
  EXPECT_TRUE((*v)->Validate(R"({"n":1,"k":"yes"})").ok());
  EXPECT_EQ((*v)->Validate(R"({"n":0,"k":"yes"})").message(),
            "the final answer does not match --output-schema: #/n: \"minimum\" failed (schema "
            "#/properties/n)");
  EXPECT_EQ((*v)->Validate(R"({"n":1,"k":"no"})").message(),
            "the final answer does not match --output-schema: #/k: \"enum\" failed (schema "
            "#/properties/k)");
  EXPECT_EQ((*v)->Validate(R"({"n":1,"k":"yes","extra":true})").message(),
            "the final answer does not match --output-schema: #/extra: \"additionalProperties\" "
            "failed (schema #)");
  EXPECT_EQ((*v)->Validate(R"({"n":1})").message(),
            "the final answer does not match --output-schema: #: \"required\" failed (schema #)");
  EXPECT_EQ((*v)->Validate("").message(),
            "the final answer is not JSON (The document is empty. at byte offset 0), so it does "
            "not match --output-schema");
}

TEST(OutputSchemaTest, MakeRefusesANonStrictSchema) {
  EXPECT_EQ(OutputSchemaValidator::Make(R"({"type":"objekt"})").message(),
            "#/type: unknown type \"objekt\" (expected one of: string, number, integer, boolean, "
            "object, array, null)");
}

}  // namespace
}  // namespace ae
