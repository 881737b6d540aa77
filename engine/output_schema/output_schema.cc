#include "engine/output_schema/output_schema.h"

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <rapidjson/pointer.h>
#include <rapidjson/schema.h>
#include <rapidjson/stringbuffer.h>

#include <regex>
#include <set>
#include <vector>

#include "base/json.h"

namespace ae {
namespace {

using rapidjson::Value;

// The keywords strict structured output accepts (README "Structured output"). Anything else
// is refused at start-up instead of being silently ignored by the service or by us.
const std::set<std::string, std::less<>> kStrictKeywords = {
    // any schema
    "type", "description", "title", "enum", "const", "anyOf", "$ref", "$defs", "definitions",
    "$schema", "$id", "$comment",
    // objects
    "properties", "required", "additionalProperties",
    // arrays
    "items", "minItems", "maxItems",
    // strings
    "pattern", "format",
    // numbers
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"};

const std::set<std::string, std::less<>> kTypes = {"string", "number", "integer", "boolean",
                                                   "object", "array",  "null"};
const std::set<std::string, std::less<>> kFormats = {
    "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"};

// "~" and "/" escaped as RFC 6901 requires.
std::string Token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string Child(const std::string& ptr, std::string_view key) {
  return ptr + "/" + Token(key);
}

Error At(const std::string& ptr, const std::string& rule) {
  return MakeError(fmt::format("{}: {}", ptr, rule));
}

std::string Str(const Value& v) {
  return std::string(v.GetString(), v.GetStringLength());
}

class Checker {
 public:
  explicit Checker(const Value& root) : root_(root) {}

  Status Schema(const Value& s, const std::string& ptr, bool is_root) {
    bool is_object = false;
    if (Status ok = Keywords(s, ptr); !ok.ok()) return ok;
    if (Status ok = Kind(s, ptr, is_root, &is_object); !ok.ok()) return ok;
    if (Status ok = Definitions(s, ptr); !ok.ok()) return ok;
    if (Status ok = Subschemas(s, ptr); !ok.ok()) return ok;
    if (Status ok = Bounds(s, ptr); !ok.ok()) return ok;
    if (Status ok = Strings(s, ptr); !ok.ok()) return ok;
    if (is_object || s.HasMember("properties") || s.HasMember("required") ||
        s.HasMember("additionalProperties")) {
      return Object(s, ptr);
    }
    return {};
  }

 private:
  static Status Keywords(const Value& s, const std::string& ptr) {
    if (!s.IsObject()) return At(ptr, "a schema must be a JSON object");
    for (auto m = s.MemberBegin(); m != s.MemberEnd(); ++m) {
      std::string key = Str(m->name);
      if (!kStrictKeywords.contains(key)) {
        return At(Child(ptr, key),
                  fmt::format("keyword \"{}\" is not supported by strict structured output", key));
      }
    }
    return {};
  }

  // "type" (the root's an object), or another keyword that says what the value is.
  static Status Kind(const Value& s, const std::string& ptr, bool is_root, bool* is_object) {
    if (auto t = s.FindMember("type"); t != s.MemberEnd()) {
      Status ok = Type(t->value, Child(ptr, "type"), is_object);
      if (!ok.ok()) return ok;
    }
    if (is_root) {
      auto t = s.FindMember("type");
      if (t == s.MemberEnd() || !t->value.IsString() || Str(t->value) != "object") {
        return At(ptr, "the root schema must have \"type\": \"object\"");
      }
    }
    if (!s.HasMember("type") && !s.HasMember("enum") && !s.HasMember("const") &&
        !s.HasMember("anyOf") && !s.HasMember("$ref")) {
      return At(ptr, "a schema needs \"type\", \"enum\", \"const\", \"anyOf\" or \"$ref\"");
    }
    return {};
  }

  Status Definitions(const Value& s, const std::string& ptr) {
    for (const char* defs : {"$defs", "definitions"}) {
      if (auto d = s.FindMember(defs); d != s.MemberEnd()) {
        if (!d->value.IsObject()) return At(Child(ptr, defs), "must be an object of schemas");
        for (auto m = d->value.MemberBegin(); m != d->value.MemberEnd(); ++m) {
          Status ok = Schema(m->value, Child(Child(ptr, defs), Str(m->name)), false);
          if (!ok.ok()) return ok;
        }
      }
    }
    return {};
  }

  // enum, and the schemas inside this one: anyOf's, the $ref's target, items.
  Status Subschemas(const Value& s, const std::string& ptr) {
    if (auto e = s.FindMember("enum"); e != s.MemberEnd()) {
      if (!e->value.IsArray() || e->value.Empty()) {
        return At(Child(ptr, "enum"), "must be a non-empty array");
      }
    }
    if (auto a = s.FindMember("anyOf"); a != s.MemberEnd()) {
      if (!a->value.IsArray() || a->value.Empty()) {
        return At(Child(ptr, "anyOf"), "must be a non-empty array of schemas");
      }
      for (rapidjson::SizeType i = 0; i < a->value.Size(); ++i) {
        Status ok = Schema(a->value[i], Child(Child(ptr, "anyOf"), std::to_string(i)), false);
        if (!ok.ok()) return ok;
      }
    }
    if (auto r = s.FindMember("$ref"); r != s.MemberEnd()) {
      Status ok = Ref(r->value, Child(ptr, "$ref"));
      if (!ok.ok()) return ok;
    }
    if (auto i = s.FindMember("items"); i != s.MemberEnd()) {
      Status ok = Schema(i->value, Child(ptr, "items"), false);
      if (!ok.ok()) return ok;
    }
    return {};
  }

  // The array and number bounds.
  static Status Bounds(const Value& s, const std::string& ptr) {
    for (const char* n : {"minItems", "maxItems"}) {
      if (auto v = s.FindMember(n); v != s.MemberEnd() && !v->value.IsUint()) {
        return At(Child(ptr, n), "must be a non-negative integer");
      }
    }
    for (const char* n : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (auto v = s.FindMember(n); v != s.MemberEnd() && !v->value.IsNumber()) {
        return At(Child(ptr, n), "must be a number");
      }
    }
    if (auto v = s.FindMember("multipleOf");
        v != s.MemberEnd() && (!v->value.IsNumber() || v->value.GetDouble() <= 0)) {
      return At(Child(ptr, "multipleOf"), "must be a number greater than 0");
    }
    return {};
  }

  // The annotations, and the string rules: pattern and format.
  static Status Strings(const Value& s, const std::string& ptr) {
    for (const char* n : {"description", "title", "$comment", "$schema", "$id"}) {
      if (auto v = s.FindMember(n); v != s.MemberEnd() && !v->value.IsString()) {
        return At(Child(ptr, n), "must be a string");
      }
    }
    if (auto p = s.FindMember("pattern"); p != s.MemberEnd()) {
      if (!p->value.IsString()) return At(Child(ptr, "pattern"), "must be a string");
      try {
        std::regex re(Str(p->value), std::regex::ECMAScript);
      } catch (const std::regex_error&) {
        return At(Child(ptr, "pattern"), "is not a valid regular expression");
      }
    }
    if (auto f = s.FindMember("format"); f != s.MemberEnd()) {
      if (!f->value.IsString() || !kFormats.contains(Str(f->value))) {
        return At(Child(ptr, "format"),
                  "unsupported format (expected one of: date-time, time, date, duration, email, "
                  "hostname, ipv4, ipv6, uuid)");
      }
    }
    return {};
  }

  static Status Type(const Value& t, const std::string& ptr, bool* is_object) {
    auto one = [&](const Value& v, const std::string& at) -> Status {
      if (!v.IsString()) return At(at, "a type must be a string");
      if (!kTypes.contains(Str(v))) {
        return At(at, fmt::format("unknown type \"{}\" (expected one of: string, number, "
                                  "integer, boolean, object, array, null)",
                                  Str(v)));
      }
      if (Str(v) == "object") *is_object = true;
      return Status();
    };
    if (t.IsArray()) {
      if (t.Empty()) return At(ptr, "must be a type name or a non-empty array of them");
      for (rapidjson::SizeType i = 0; i < t.Size(); ++i) {
        Status ok = one(t[i], Child(ptr, std::to_string(i)));
        if (!ok.ok()) return ok;
      }
      return Status();
    }
    return one(t, ptr);
  }

  Status Object(const Value& s, const std::string& ptr) {
    auto ap = s.FindMember("additionalProperties");
    if (ap == s.MemberEnd() || !ap->value.IsBool() || ap->value.GetBool()) {
      return At(ptr, "every object needs \"additionalProperties\": false");
    }
    auto props = s.FindMember("properties");
    if (props != s.MemberEnd() && !props->value.IsObject()) {
      return At(Child(ptr, "properties"), "must be an object of schemas");
    }
    auto req = s.FindMember("required");
    std::set<std::string> required;
    if (req != s.MemberEnd()) {
      if (!req->value.IsArray()) return At(Child(ptr, "required"), "must be an array of names");
      for (rapidjson::SizeType i = 0; i < req->value.Size(); ++i) {
        const Value& n = req->value[i];
        std::string at = Child(Child(ptr, "required"), std::to_string(i));
        if (!n.IsString()) return At(at, "must be a property name");
        if (props == s.MemberEnd() || !props->value.HasMember(n)) {
          return At(at, fmt::format("\"{}\" is required but not in \"properties\"", Str(n)));
        }
        required.insert(Str(n));
      }
    }
    if (props == s.MemberEnd()) return Status();
    for (auto m = props->value.MemberBegin(); m != props->value.MemberEnd(); ++m) {
      std::string name = Str(m->name);
      std::string at = Child(Child(ptr, "properties"), name);
      if (!required.contains(name)) {
        return At(
            at, fmt::format("every property must be listed in \"required\" (\"{}\" is not)", name));
      }
      Status ok = Schema(m->value, at, false);
      if (!ok.ok()) return ok;
    }
    return Status();
  }

  Status Ref(const Value& r, const std::string& ptr) {
    if (!r.IsString() || r.GetStringLength() == 0 || r.GetString()[0] != '#') {
      return At(ptr, "only local references (\"#/...\") are supported");
    }
    std::string target = Str(r).substr(1);
    if (target.empty()) return Status();  // the root (recursion)
    rapidjson::Pointer pointer(target.c_str(), target.size());
    if (!pointer.IsValid() || pointer.Get(root_) == nullptr) {
      return At(ptr, fmt::format("reference \"{}\" does not resolve", Str(r)));
    }
    return Status();
  }

  const Value& root_;
};

// The checked schema in a form RapidJSON's draft-04 validator reads the same way the service
// does: `const` becomes a one-value `enum`, numeric `exclusiveMinimum`/`exclusiveMaximum`
// (draft 6+) become `minimum`/`maximum` with the draft-04 boolean.
void ToDraft04(Value& s, rapidjson::Document::AllocatorType& alloc) {
  if (!s.IsObject()) return;
  // Only where schemas are: a property called "const" is a name, not a keyword. (HasMember
  // and operator[] rather than FindMember: clang rejects comparing RapidJSON's mutable
  // member iterators in C++20.)
  for (const char* map : {"properties", "$defs", "definitions"}) {
    if (!s.HasMember(map) || !s[map].IsObject()) continue;
    std::vector<std::string> names;
    for (const auto& sub : static_cast<const Value&>(s[map]).GetObject()) {
      names.push_back(Str(sub.name));
    }
    for (const std::string& name : names) {
      ToDraft04(s[map][name], alloc);
    }
  }
  if (s.HasMember("items")) ToDraft04(s["items"], alloc);
  if (s.HasMember("anyOf") && s["anyOf"].IsArray()) {
    for (auto& sub : s["anyOf"].GetArray()) ToDraft04(sub, alloc);
  }
  if (s.HasMember("const")) {
    Value values(rapidjson::kArrayType);
    values.PushBack(Value(s["const"], alloc), alloc);
    s.RemoveMember("const");
    s.AddMember("enum", values, alloc);
  }
  for (auto [exclusive, bound] :
       {std::pair{"exclusiveMinimum", "minimum"}, std::pair{"exclusiveMaximum", "maximum"}}) {
    if (!s.HasMember(exclusive) || !s[exclusive].IsNumber()) continue;
    Value limit(s[exclusive], alloc);
    s.RemoveMember(exclusive);
    s.RemoveMember(bound);
    s.AddMember(Value(bound, alloc), limit, alloc);
    s.AddMember(Value(exclusive, alloc), Value(true), alloc);
  }
}

std::string PointerText(const rapidjson::Pointer& p) {
  rapidjson::StringBuffer buf;
  p.StringifyUriFragment(buf);
  return std::string(buf.GetString(), buf.GetSize());
}

// Parses `schema_json` into *doc and checks it: the one parse both entry points make.
Status ParseStrictSchema(std::string_view schema_json, rapidjson::Document* doc) {
  if (std::optional<JsonParseError> bad = ParseJsonInto(schema_json, doc)) {
    return MakeError(fmt::format("not JSON ({} at byte offset {})", bad->reason, bad->offset));
  }
  if (!doc->IsObject()) return At("#", "a schema must be a JSON object");
  return Checker(*doc).Schema(*doc, "#", true);
}

}  // namespace

Status CheckStrictOutputSchema(std::string_view schema_json) {
  rapidjson::Document doc;
  return ParseStrictSchema(schema_json, &doc);
}

struct OutputSchemaValidator::Impl {
  rapidjson::Document doc;
  std::unique_ptr<rapidjson::SchemaDocument> schema;
};

OutputSchemaValidator::OutputSchemaValidator() : impl_(std::make_unique<Impl>()) {}
OutputSchemaValidator::~OutputSchemaValidator() = default;

Result<std::unique_ptr<OutputSchemaValidator>> OutputSchemaValidator::Make(
    std::string_view schema_json) {
  std::unique_ptr<OutputSchemaValidator> v(new OutputSchemaValidator());
  if (Status ok = ParseStrictSchema(schema_json, &v->impl_->doc); !ok.ok()) return ok.error();
  ToDraft04(v->impl_->doc, v->impl_->doc.GetAllocator());
  v->impl_->schema = std::make_unique<rapidjson::SchemaDocument>(v->impl_->doc);
  return v;
}

Status OutputSchemaValidator::Validate(std::string_view answer) const {
  // The model's text: parsed iteratively with the nesting bounded, like every JSON it sends.
  rapidjson::Document doc;
  if (std::optional<JsonParseError> bad = ParseJsonInto(answer, &doc)) {
    return MakeError(
        fmt::format("the final answer is not JSON ({} at byte offset {}), so it does not match "
                    "--output-schema",
                    bad->reason, bad->offset));
  }
  rapidjson::SchemaValidator validator(*impl_->schema);
  if (doc.Accept(validator)) return Status();
  return MakeError(fmt::format(
      "the final answer does not match --output-schema: {}: \"{}\" failed (schema {})",
      PointerText(validator.GetInvalidDocumentPointer()), validator.GetInvalidSchemaKeyword(),
      PointerText(validator.GetInvalidSchemaPointer())));
}

}  // namespace ae
