#include "tests/support/event_schema_check.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/schema.h>
#include <rapidjson/stringbuffer.h>

#include <cstdio>
#include <cstdlib>

#include "schema/events_schema.h"

namespace ae::test {
namespace {

// The schema's JSON, parsed once; a schema that does not parse fails every validation loudly.
const rapidjson::Document& SchemaJson() {
  static const rapidjson::Document* doc = [] {
    auto* parsed = new rapidjson::Document;
    std::string_view text = EventsSchemaJson();
    if (parsed->Parse(text.data(), text.size()).HasParseError()) {
      std::fprintf(stderr, "schema/events.schema.json does not parse: %s at %zu\n",
                   rapidjson::GetParseError_En(parsed->GetParseError()), parsed->GetErrorOffset());
      std::abort();
    }
    return parsed;
  }();
  return *doc;
}

// Compiled once per thread. RapidJSON 1.1's regex (the schema's "pattern" keywords) keeps its
// match state inside the compiled regex, so threads validating at once (the fault suite's
// concurrent runs) cannot share a SchemaDocument: that race tripped its
// `index < stateCount_` assertion.
const rapidjson::SchemaDocument& Schema() {
  thread_local const rapidjson::SchemaDocument schema(SchemaJson());
  return schema;
}

std::string Pointer(const rapidjson::Pointer& p) {
  rapidjson::StringBuffer buf;
  p.StringifyUriFragment(buf);
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace

std::string ValidateEvent(std::string_view line) {
  rapidjson::Document d;
  if (d.Parse(line.data(), line.size()).HasParseError() || !d.IsObject()) {
    return "not a JSON object: " + std::string(line);
  }
  rapidjson::SchemaValidator validator(Schema());
  if (d.Accept(validator)) return "";
  return "does not match schema/events.schema.json (keyword \"" +
         std::string(validator.GetInvalidSchemaKeyword()) + "\" at schema " +
         Pointer(validator.GetInvalidSchemaPointer()) + ", document " +
         Pointer(validator.GetInvalidDocumentPointer()) + "): " + std::string(line);
}

std::string ValidateEventStream(std::string_view jsonl) {
  if (!jsonl.empty() && jsonl.back() != '\n') return "the stream does not end with a newline";
  size_t pos = 0;
  int n = 0;
  while (pos < jsonl.size()) {
    size_t nl = jsonl.find('\n', pos);
    ++n;
    std::string why = ValidateEvent(jsonl.substr(pos, nl - pos));
    if (!why.empty()) return "line " + std::to_string(n) + " " + why;
    pos = nl + 1;
  }
  return "";
}

}  // namespace ae::test
