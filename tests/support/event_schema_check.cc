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

// Parsed once; a schema that does not parse fails every validation loudly.
const rapidjson::SchemaDocument& Schema() {
  static const rapidjson::SchemaDocument* schema = [] {
    static rapidjson::Document doc;
    std::string_view text = EventsSchemaJson();
    if (doc.Parse(text.data(), text.size()).HasParseError()) {
      std::fprintf(stderr, "schema/events.schema.json does not parse: %s at %zu\n",
                   rapidjson::GetParseError_En(doc.GetParseError()), doc.GetErrorOffset());
      std::abort();
    }
    return new rapidjson::SchemaDocument(doc);
  }();
  return *schema;
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
