// The review result: the schema is strict (every object closed, every property required), the
// model's answer is validated and normalised, and its JSON and Markdown renderings are exact.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <functional>

#include "engine/review/review_output.h"
#include "outputs/review_render.h"

namespace ae {
namespace {

constexpr const char* kAnswer = R"({"findings":[
  {"title":"Division by zero on an empty list","body":"`mean([])` divides by `len(xs)`, which is 0.\nGuard it.","confidence_score":0.9,"priority":1,
   "code_location":{"absolute_file_path":"calc.py","line_range":{"start":7,"end":8}}},
  {"title":"Loop skips the last element","body":"`range(len(xs) - 1)` stops one short.","confidence_score":0.95,"priority":0,
   "code_location":{"absolute_file_path":"/work/repo/calc.py","line_range":{"start":3,"end":3}}}],
 "overall_correctness":"patch is incorrect","overall_explanation":"Two bugs break totals and means.","overall_confidence_score":0.8})";

TEST(ReviewOutput, SchemaIsStrict) {
  rapidjson::Document schema;
  schema.Parse(ReviewOutputSchema().c_str());
  ASSERT_FALSE(schema.HasParseError());
  int objects = 0;
  std::function<void(const rapidjson::Value&, const std::string&)> walk =
      [&](const rapidjson::Value& s, const std::string& where) {
        if (s.HasMember("type") && s["type"] == "object") {
          ++objects;
          ASSERT_TRUE(s.HasMember("additionalProperties")) << where;
          EXPECT_TRUE(s["additionalProperties"].IsFalse()) << where;
          ASSERT_TRUE(s.HasMember("required")) << where;
          EXPECT_EQ(s["required"].Size(), s["properties"].MemberCount()) << where;
          for (const auto& r : s["required"].GetArray()) {
            EXPECT_TRUE(s["properties"].HasMember(r)) << where << " " << r.GetString();
          }
          for (const auto& p : s["properties"].GetObject()) {
            walk(p.value, where + "/" + p.name.GetString());
          }
        }
        if (s.HasMember("items")) walk(s["items"], where + "/items");
      };
  walk(schema, "#");
  EXPECT_EQ(objects, 4);  // the result, a finding, its code_location, its line_range
}

TEST(ReviewOutput, ParsesAndMakesPathsAbsolute) {
  Result<ReviewItem> review = ParseReviewOutput(kAnswer, "/work/repo");
  ASSERT_TRUE(review.ok()) << review.message();
  ASSERT_EQ(review->findings.size(), 2u);
  EXPECT_EQ(review->findings[0].absolute_file_path, "/work/repo/calc.py");
  EXPECT_EQ(review->findings[0].line_start, 7);
  EXPECT_EQ(review->findings[0].line_end, 8);
  EXPECT_EQ(review->findings[1].priority, 0);
  EXPECT_EQ(review->overall_correctness, "patch is incorrect");
  EXPECT_DOUBLE_EQ(review->overall_confidence_score, 0.8);
}

TEST(ReviewOutput, ExactJson) {
  Result<ReviewItem> review = ParseReviewOutput(kAnswer, "/work/repo");
  ASSERT_TRUE(review.ok()) << review.message();
  EXPECT_EQ(
      ReviewJson(*review),
      R"({"findings":[{"title":"Division by zero on an empty list","body":"`mean([])` divides by `len(xs)`, which is 0.\nGuard it.","confidence_score":0.9,"priority":1,"code_location":{"absolute_file_path":"/work/repo/calc.py","line_range":{"start":7,"end":8}}},)"
      R"({"title":"Loop skips the last element","body":"`range(len(xs) - 1)` stops one short.","confidence_score":0.95,"priority":0,"code_location":{"absolute_file_path":"/work/repo/calc.py","line_range":{"start":3,"end":3}}}],)"
      R"("overall_correctness":"patch is incorrect","overall_explanation":"Two bugs break totals and means.","overall_confidence_score":0.8})");
}

TEST(ReviewOutput, ExactMarkdownOrderedByPriority) {
  Result<ReviewItem> review = ParseReviewOutput(kAnswer, "/work/repo");
  ASSERT_TRUE(review.ok()) << review.message();
  EXPECT_EQ(ReviewMarkdown(*review, "/work/repo", std::string("Faster totals")),
            "## Code review: Faster totals\n"
            "\n"
            "**Verdict: patch is incorrect** (confidence 0.80)\n"
            "\n"
            "Two bugs break totals and means.\n"
            "\n"
            "### Findings (2)\n"
            "\n"
            "1. **[P0] Loop skips the last element** — `calc.py:3` (confidence 0.95)\n"
            "\n"
            "   `range(len(xs) - 1)` stops one short.\n"
            "\n"
            "2. **[P1] Division by zero on an empty list** — `calc.py:7-8` (confidence 0.90)\n"
            "\n"
            "   `mean([])` divides by `len(xs)`, which is 0.\n"
            "   Guard it.\n");
}

TEST(ReviewOutput, MarkdownWithoutFindings) {
  Result<ReviewItem> review = ParseReviewOutput(
      R"({"findings":[],"overall_correctness":"patch is correct","overall_explanation":"Fine.","overall_confidence_score":1})",
      "/r");
  ASSERT_TRUE(review.ok()) << review.message();
  EXPECT_EQ(ReviewMarkdown(*review, "/r", {}),
            "## Code review\n\n**Verdict: patch is correct** (confidence 1.00)\n\nFine.\n\n"
            "No findings.\n");
}

// Model text in the pull request comment is inert: no raw HTML, no image a browser would load,
// no link; code spans and fenced blocks (shown as text by Markdown) are kept as they are, and
// a fence left open is closed where the model's text ends.
TEST(ReviewOutput, MarkdownRendersModelTextInert) {
  ReviewItem review;
  review.overall_correctness = "patch is <b>correct</b>";
  review.overall_explanation =
      "Fine.<img src=\"https://evil.example/p.png\"> See [docs](javascript:alert(1)) & "
      "![x](https://evil.example/pixel.png) \\[x](y)";
  review.overall_confidence_score = 0.5;
  ReviewFinding f;
  f.title = "<script>alert(1)</script> `a<b`";
  f.body = "Use `x < y` here.\n```html\n<div>kept</div>\n```\n<details>open</details>\n~~~\n<i>";
  f.priority = 1;
  f.confidence_score = 0.5;
  f.absolute_file_path = "/r/we``ird.py";
  f.line_start = f.line_end = 2;
  review.findings.push_back(f);
  EXPECT_EQ(
      ReviewMarkdown(review, "/r", std::string("<a href=x>t</a>")),
      "## Code review: &lt;a href=x&gt;t&lt;/a&gt;\n"
      "\n"
      "**Verdict: patch is &lt;b&gt;correct&lt;/b&gt;** (confidence 0.50)\n"
      "\n"
      "Fine.&lt;img src=\"https://evil.example/p.png\"&gt; See \\[docs\\](javascript:alert(1)) "
      "&amp; !\\[x\\](https://evil.example/pixel.png) \\\\\\[x\\](y)\n"
      "\n"
      "### Findings (1)\n"
      "\n"
      "1. **[P1] &lt;script&gt;alert(1)&lt;/script&gt; `a<b`** — ``` we``ird.py:2 ``` "
      "(confidence 0.50)\n"
      "\n"
      "   Use `x < y` here.\n"
      "   ```html\n"
      "   <div>kept</div>\n"
      "   ```\n"
      "   &lt;details&gt;open&lt;/details&gt;\n"
      "   ~~~\n"
      "   <i>\n"
      "   ~~~\n");
}

TEST(ReviewOutput, FencedJsonIsAccepted) {
  std::string fenced = std::string("```json\n") + kAnswer + "\n```\n";
  EXPECT_TRUE(ParseReviewOutput(fenced, "/work/repo").ok());
}

TEST(ReviewOutput, InvalidAnswersAreExactErrors) {
  struct Case {
    std::string answer, error;
  };
  const std::vector<Case> cases = {
      {"", "the model's final answer is empty, not a review"},
      {"Looks good to me!",
       "the model's final answer is not the review JSON: Invalid value. at byte 0"},
      {R"({"findings":[],"overall_correctness":"fine","overall_explanation":"","overall_confidence_score":1})",
       "the model's answer does not follow the review format: #/overall_correctness: \"enum\" "
       "failed (schema #/properties/overall_correctness)"},
      {R"({"findings":[],"overall_correctness":"patch is correct","overall_explanation":""})",
       "the model's answer does not follow the review format: #: \"required\" failed (schema #)"},
      {R"({"findings":[{"title":"t","body":"b","confidence_score":0.5,"priority":7,"code_location":{"absolute_file_path":"a","line_range":{"start":1,"end":1}}}],"overall_correctness":"patch is correct","overall_explanation":"","overall_confidence_score":1})",
       "the model's answer does not follow the review format: #/findings/0/priority: \"maximum\" "
       "failed (schema #/properties/findings/items/properties/priority)"},
      {R"({"findings":[{"title":"t","body":"b","confidence_score":0.5,"priority":1,"code_location":{"absolute_file_path":"a","line_range":{"start":5,"end":2}}}],"overall_correctness":"patch is correct","overall_explanation":"","overall_confidence_score":1})",
       "the model's answer does not follow the review format: "
       "#/findings/0/code_location/line_range: end 2 is before start 5"},
      {R"({"findings":[],"overall_correctness":"patch is correct","overall_explanation":"","overall_confidence_score":1,"extra":1})",
       "the model's answer does not follow the review format: #/extra: \"additionalProperties\" "
       "failed (schema #)"},
  };
  for (const Case& c : cases) {
    Result<ReviewItem> review = ParseReviewOutput(c.answer, "/r");
    ASSERT_FALSE(review.ok()) << c.answer;
    EXPECT_EQ(review.message(), c.error) << c.answer;
  }
}

}  // namespace
}  // namespace ae
