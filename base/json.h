// The one JSON toolkit. Every JSON that crosses a trust boundary (model streams, MCP, session
// files, tool arguments, the output schema, our own events and requests) is read and written
// here, so the limits hold everywhere:
//  - parsing is iterative (RapidJSON's kParseIterativeFlag: no recursion on the C++ stack) and
//    refuses nesting deeper than kMaxJsonDepth with a clear error, so no input can exhaust the
//    stack, here or in anything that later walks the value;
//  - writing goes through JsonWriter: every string and key is made valid UTF-8 (U+FFFD for bad
//    bytes), numbers a JSON text cannot hold (inf, nan: "1.8e308" parses as inf) are written as
//    strings, every RapidJSON result is checked, and values are walked with an explicit stack;
//  - embedded JSON text (history items, MCP results) is written verbatim only after it has been
//    validated, and re-serialised or quoted as a string when it is not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "base/result.h"

namespace ae {

// Deeper than any real request, item or schema; shallow enough that nothing can overflow.
inline constexpr size_t kMaxJsonDepth = 512;

struct JsonParseError {
  size_t offset = 0;
  std::string reason;  // RapidJSON's text ("Invalid value.") or "nested deeper than 512 levels"
};
// Parses `text` into *doc (iteratively, nesting bounded); the error, if any. For call sites
// whose messages have their own established wording.
std::optional<JsonParseError> ParseJsonInto(std::string_view text, rapidjson::Document* doc);

// Parses `text` (iteratively, nesting bounded). Errors read "<what> is not valid JSON (…)".
// max_bytes > 0 also bounds the size.
Result<rapidjson::Document> ParseJson(std::string_view text, std::string_view what = "JSON",
                                      size_t max_bytes = 0);
// As ParseJson, and the value must be an object: "<what> must be a JSON object".
Result<rapidjson::Document> ParseJsonObject(std::string_view text, std::string_view what = "JSON",
                                            size_t max_bytes = 0);

// Compact, safe serialisation of a value (see JsonWriter).
std::string ToJson(const rapidjson::Value& value);

// `text` re-serialised through JsonWriter when it parses, else nullopt-like empty Result.
Result<std::string> NormalizeJson(std::string_view text, std::string_view what = "JSON");

// The member `name` of `obj`; nullptr when `obj` is not an object or has no such member.
const rapidjson::Value* FindJsonMember(const rapidjson::Value& obj, const char* name);

// The member `name` of `obj` as a string; empty when absent or not a string.
std::string StringMember(const rapidjson::Value& obj, const char* name);
// The same through a member that may be missing (`obj` null): empty when absent.
std::string StringMember(const rapidjson::Value* obj, const char* name);
// The member `name` of `obj` (null: absent) as a 64-bit integer; 0 when absent or not one.
int64_t Int64Member(const rapidjson::Value* obj, const char* name);
// The member `name` of `obj` (null: absent) as a list of strings: its array's string items,
// others skipped; empty when absent or not an array.
std::vector<std::string> StringArrayMember(const rapidjson::Value* obj, const char* name);

// A compact JSON writer whose output is always valid JSON in valid UTF-8. Method names follow
// rapidjson::Writer so call sites read the same. ok() is false only if RapidJSON itself refused
// something (unbalanced calls: a bug); Take() then returns an error rather than a torn text.
class JsonWriter {
 public:
  JsonWriter() : w_(buf_) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  void Reserve(size_t bytes) { buf_.Reserve(bytes); }
  void StartObject() { Check(w_.StartObject()); }
  void EndObject() { Check(w_.EndObject()); }
  void StartArray() { Check(w_.StartArray()); }
  void EndArray() { Check(w_.EndArray()); }
  void Null() { Check(w_.Null()); }
  void Bool(bool b) { Check(w_.Bool(b)); }
  void Int(int v) { Check(w_.Int(v)); }
  void Int64(int64_t v) { Check(w_.Int64(v)); }
  void Uint64(uint64_t v) { Check(w_.Uint64(v)); }
  // Non-finite numbers become the strings "Infinity", "-Infinity", "NaN".
  void Double(double d);
  void Key(std::string_view key);
  void String(std::string_view s);
  // A parsed (or built) value, walked iteratively.
  void Value(const rapidjson::Value& value);
  // Embedded JSON text: verbatim when it is valid (syntax, UTF-8, depth), re-serialised when it
  // only needs its strings repaired, else written as a JSON string so the output stays valid.
  // Returns whether `json` was JSON.
  bool Raw(std::string_view json);

  bool ok() const { return ok_; }
  // The text so far (valid only when complete and ok()).
  std::string_view view() const { return {buf_.GetString(), buf_.GetSize()}; }
  Result<std::string> Take() const;

 private:
  void Check(bool ok) { ok_ = ok_ && ok; }

  rapidjson::StringBuffer buf_;
  rapidjson::Writer<rapidjson::StringBuffer> w_;
  bool ok_ = true;
};

}  // namespace ae
