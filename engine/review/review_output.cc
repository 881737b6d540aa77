#include "engine/review/review_output.h"

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/schema.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <filesystem>

#include "base/json.h"

namespace ae {
namespace {

constexpr const char* kSchema = R"({
  "type": "object",
  "additionalProperties": false,
  "required": ["findings", "overall_correctness", "overall_explanation", "overall_confidence_score"],
  "properties": {
    "findings": {
      "type": "array",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["title", "body", "confidence_score", "priority", "code_location"],
        "properties": {
          "title": {"type": "string"},
          "body": {"type": "string"},
          "confidence_score": {"type": "number", "minimum": 0, "maximum": 1},
          "priority": {"type": "integer", "minimum": 0, "maximum": 3},
          "code_location": {
            "type": "object",
            "additionalProperties": false,
            "required": ["absolute_file_path", "line_range"],
            "properties": {
              "absolute_file_path": {"type": "string"},
              "line_range": {
                "type": "object",
                "additionalProperties": false,
                "required": ["start", "end"],
                "properties": {
                  "start": {"type": "integer", "minimum": 1, "maximum": 100000000},
                  "end": {"type": "integer", "minimum": 1, "maximum": 100000000}
                }
              }
            }
          }
        }
      }
    },
    "overall_correctness": {"type": "string", "enum": ["patch is correct", "patch is incorrect"]},
    "overall_explanation": {"type": "string"},
    "overall_confidence_score": {"type": "number", "minimum": 0, "maximum": 1}
  }
})";

// Models on wires without enforced structured output sometimes fence their JSON; the content
// is what counts.
std::string_view Unfenced(std::string_view s) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    return v;
  };
  s = trim(s);
  if (s.starts_with("```") && s.size() >= 6 && s.ends_with("```")) {
    size_t nl = s.find('\n');
    if (nl != std::string_view::npos && nl < s.size() - 3) {
      s = trim(s.substr(nl + 1, s.size() - 3 - (nl + 1)));
    }
  }
  return s;
}

// Strings may hold NUL (\u0000): take their length, not their first NUL.
std::string Str(const rapidjson::Value& v) {
  return std::string(v.GetString(), v.GetStringLength());
}

const rapidjson::SchemaDocument& CompiledSchema() {
  static const rapidjson::SchemaDocument* schema = [] {
    rapidjson::Document doc;
    doc.Parse(kSchema);
    return new rapidjson::SchemaDocument(doc);
  }();
  return *schema;
}

}  // namespace

const std::string& ReviewOutputSchema() {
  static const std::string compact = [] {
    rapidjson::Document doc;
    doc.Parse(kSchema);
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    doc.Accept(w);
    return std::string(buf.GetString(), buf.GetSize());
  }();
  return compact;
}

Result<ReviewItem> ParseReviewOutput(std::string_view answer, const std::string& repo_root) {
  std::string_view json = Unfenced(answer);
  if (json.empty()) return MakeError("the model's final answer is empty, not a review");
  rapidjson::Document doc;
  if (std::optional<JsonParseError> bad = ParseJsonInto(json, &doc)) {
    return MakeError(fmt::format("the model's final answer is not the review JSON: {} at byte {}",
                                 bad->reason, bad->offset));
  }
  rapidjson::SchemaValidator validator(CompiledSchema());
  if (!doc.Accept(validator)) {
    rapidjson::StringBuffer where, rule;
    validator.GetInvalidDocumentPointer().StringifyUriFragment(where);
    validator.GetInvalidSchemaPointer().StringifyUriFragment(rule);
    return MakeError(fmt::format(
        "the model's answer does not follow the review format: {}: \"{}\" failed (schema {})",
        where.GetString(), validator.GetInvalidSchemaKeyword(), rule.GetString()));
  }

  ReviewItem review;
  for (const auto& f : doc["findings"].GetArray()) {
    ReviewFinding finding;
    finding.title = Str(f["title"]);
    finding.body = Str(f["body"]);
    finding.confidence_score = f["confidence_score"].GetDouble();
    finding.priority = f["priority"].GetInt();
    const auto& location = f["code_location"];
    std::filesystem::path path(Str(location["absolute_file_path"]));
    if (path.is_relative()) path = std::filesystem::path(repo_root) / path;
    finding.absolute_file_path = path.lexically_normal().string();
    finding.line_start = location["line_range"]["start"].GetInt64();
    finding.line_end = location["line_range"]["end"].GetInt64();
    if (finding.line_end < finding.line_start) {
      return MakeError(fmt::format(
          "the model's answer does not follow the review format: #/findings/{}/code_location/"
          "line_range: end {} is before start {}",
          review.findings.size(), finding.line_end, finding.line_start));
    }
    review.findings.push_back(std::move(finding));
  }
  review.overall_correctness = Str(doc["overall_correctness"]);
  review.overall_explanation = Str(doc["overall_explanation"]);
  review.overall_confidence_score = doc["overall_confidence_score"].GetDouble();
  return review;
}

}  // namespace ae
