#include "base/json.h"

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <cmath>
#include <vector>

#include "base/utf8.h"

namespace ae {
namespace {

constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag;

struct Shape {
  size_t depth = 0;         // deepest nesting of [ and {
  size_t too_deep_at = 0;   // offset where kMaxJsonDepth was passed (when depth exceeds it)
  bool whitespace = false;  // whitespace between tokens: the text is not compact
  size_t nul_at = std::string_view::npos;  // the first NUL byte, never part of JSON text
};

// One linear pass over the bytes, outside strings: how deep the text nests and whether it is
// compact. Runs before RapidJSON so a million '[' are refused at the 513th, in O(n).
Shape Measure(std::string_view text) {
  Shape s;
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    // RapidJSON reads a NUL as the end of its input: `{}\0tail` would parse as `{}`.
    if (c == '\0' && s.nul_at == std::string_view::npos) s.nul_at = i;
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > s.depth) s.depth = depth;
        if (depth > kMaxJsonDepth && s.too_deep_at == 0) s.too_deep_at = i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      case ' ':
      case '\n':
      case '\r':
      case '\t':
        s.whitespace = true;
        break;
      default:
        break;
    }
  }
  return s;
}

// Accepts exactly the JSON texts that can be copied verbatim into our output: one value in RFC
// 8259 syntax and nothing else around it, valid UTF-8 (kParseValidateEncodingFlag) and only
// finite numbers.
struct VerbatimCheck : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, VerbatimCheck> {
  bool Double(double d) { return std::isfinite(d); }
};

// The reader reads the bytes themselves: rapidjson::EncodedInputStream would first consume a
// UTF-8 BOM, and with it any lone 0xEF byte (its BOM probe takes the byte before it looks at the
// next), so "\xEF\xBB\xBF{}" or "\xEF1" passed here and reached our output verbatim.
bool CanCopyVerbatim(std::string_view json) {
  rapidjson::MemoryStream is(json.data(), json.size());
  rapidjson::Reader reader;
  VerbatimCheck check;
  return !reader.Parse<kParseFlags | rapidjson::kParseValidateEncodingFlag>(is, check).IsError();
}

rapidjson::Type RootType(std::string_view json) {
  for (char c : json) {
    switch (c) {
      case '{':
        return rapidjson::kObjectType;
      case '[':
        return rapidjson::kArrayType;
      case '"':
        return rapidjson::kStringType;
      case 't':
        return rapidjson::kTrueType;
      case 'f':
        return rapidjson::kFalseType;
      case 'n':
        return rapidjson::kNullType;
      case ' ':
      case '\n':
      case '\r':
      case '\t':
        continue;
      default:
        return rapidjson::kNumberType;
    }
  }
  return rapidjson::kNullType;
}

}  // namespace

std::optional<JsonParseError> ParseJsonInto(std::string_view text, rapidjson::Document* doc) {
  Shape shape = Measure(text);
  if (shape.depth > kMaxJsonDepth) {
    doc->SetNull();
    return JsonParseError{shape.too_deep_at,
                          fmt::format("nested deeper than {} levels", kMaxJsonDepth)};
  }
  if (shape.nul_at != std::string_view::npos) {
    doc->SetNull();
    return JsonParseError{shape.nul_at, "a NUL byte is not allowed in JSON text"};
  }
  // Not Document::Parse(str, len): it reads through an EncodedInputStream, which drops a BOM and
  // any lone 0xEF byte before the value (see CanCopyVerbatim), so "\xEF1" parsed as 1.
  rapidjson::MemoryStream is(text.data(), text.size());
  doc->ParseStream<kParseFlags>(is);
  if (doc->HasParseError()) {
    return JsonParseError{doc->GetErrorOffset(), rapidjson::GetParseError_En(doc->GetParseError())};
  }
  return std::nullopt;
}

Result<rapidjson::Document> ParseJson(std::string_view text, std::string_view what,
                                      size_t max_bytes) {
  if (max_bytes > 0 && text.size() > max_bytes) {
    return MakeError(
        fmt::format("{} is too large ({} bytes, at most {})", what, text.size(), max_bytes));
  }
  rapidjson::Document doc;
  if (auto e = ParseJsonInto(text, &doc)) {
    return MakeError(
        fmt::format("{} is not valid JSON (offset {}: {})", what, e->offset, e->reason));
  }
  return doc;
}

Result<rapidjson::Document> ParseJsonObject(std::string_view text, std::string_view what,
                                            size_t max_bytes) {
  Result<rapidjson::Document> doc = ParseJson(text, what, max_bytes);
  if (doc.ok() && !doc->IsObject()) {
    return MakeError(fmt::format("{} must be a JSON object", what));
  }
  return doc;
}

std::string ToJson(const rapidjson::Value& value) {
  JsonWriter w;
  w.Value(value);
  return std::string(w.view());
}

Result<std::string> NormalizeJson(std::string_view text, std::string_view what) {
  Result<rapidjson::Document> doc = ParseJson(text, what);
  if (!doc.ok()) return doc.error();
  return ToJson(*doc);
}

const rapidjson::Value* FindJsonMember(const rapidjson::Value& obj, const char* name) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(name);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

std::string StringMember(const rapidjson::Value& obj, const char* name) {
  if (!obj.IsObject()) return {};
  auto it = obj.FindMember(name);
  if (it == obj.MemberEnd() || !it->value.IsString()) return {};
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

std::string StringMember(const rapidjson::Value* obj, const char* name) {
  return obj ? StringMember(*obj, name) : std::string();
}

int64_t Int64Member(const rapidjson::Value* obj, const char* name) {
  const rapidjson::Value* m = obj ? FindJsonMember(*obj, name) : nullptr;
  return m && m->IsInt64() ? m->GetInt64() : 0;
}

std::vector<std::string> StringArrayMember(const rapidjson::Value* obj, const char* name) {
  std::vector<std::string> out;
  const rapidjson::Value* m = obj ? FindJsonMember(*obj, name) : nullptr;
  if (m == nullptr || !m->IsArray()) return out;
  for (const rapidjson::Value& item : m->GetArray()) {
    if (item.IsString()) out.emplace_back(item.GetString(), item.GetStringLength());
  }
  return out;
}

void JsonWriter::Double(double d) {
  // rapidjson::Writer::Double writes the separator before it refuses a non-finite number,
  // leaving `"key":,` behind: decide first.
  if (std::isnan(d)) return String("NaN");
  if (std::isinf(d)) return String(d > 0 ? "Infinity" : "-Infinity");
  Check(w_.Double(d));
}

void JsonWriter::Key(std::string_view key) {
  if (IsValidUtf8(key)) {
    Check(w_.Key(key.data(), static_cast<rapidjson::SizeType>(key.size())));
  } else {
    std::string clean = SanitizeUtf8(key);
    Check(w_.Key(clean.data(), static_cast<rapidjson::SizeType>(clean.size())));
  }
}

void JsonWriter::String(std::string_view s) {
  if (IsValidUtf8(s)) {
    Check(w_.String(s.data(), static_cast<rapidjson::SizeType>(s.size())));
  } else {
    std::string clean = SanitizeUtf8(s);
    Check(w_.String(clean.data(), static_cast<rapidjson::SizeType>(clean.size())));
  }
}

void JsonWriter::Value(const rapidjson::Value& root) {
  // An explicit stack instead of Value::Accept's recursion: a value built in code has no
  // parse-time depth bound, and this walk must not be the thing that overflows.
  struct Frame {
    const rapidjson::Value* v;
    size_t next;  // index of the next member or element to write
  };
  std::vector<Frame> stack;
  auto scalar_or_open = [&](const rapidjson::Value& v) {
    switch (v.GetType()) {
      case rapidjson::kNullType:
        Null();
        break;
      case rapidjson::kFalseType:
        Bool(false);
        break;
      case rapidjson::kTrueType:
        Bool(true);
        break;
      case rapidjson::kStringType:
        String(std::string_view(v.GetString(), v.GetStringLength()));
        break;
      case rapidjson::kNumberType:
        if (v.IsInt64()) {
          Int64(v.GetInt64());
        } else if (v.IsUint64()) {
          Uint64(v.GetUint64());
        } else {
          Double(v.GetDouble());
        }
        break;
      case rapidjson::kObjectType:
        StartObject();
        stack.push_back({&v, 0});
        break;
      case rapidjson::kArrayType:
        StartArray();
        stack.push_back({&v, 0});
        break;
    }
  };
  scalar_or_open(root);
  while (!stack.empty()) {
    Frame& top = stack.back();
    const rapidjson::Value& v = *top.v;
    if (v.IsObject()) {
      if (top.next == v.MemberCount()) {
        stack.pop_back();
        EndObject();
        continue;
      }
      const auto& m = *(v.MemberBegin() + static_cast<rapidjson::SizeType>(top.next++));
      Key(std::string_view(m.name.GetString(), m.name.GetStringLength()));
      scalar_or_open(m.value);  // may invalidate `top`
    } else {
      if (top.next == v.Size()) {
        stack.pop_back();
        EndArray();
        continue;
      }
      scalar_or_open(v[static_cast<rapidjson::SizeType>(top.next++)]);
    }
  }
}

bool JsonWriter::Raw(std::string_view json) {
  Shape shape = Measure(json);
  if (shape.depth <= kMaxJsonDepth && !shape.whitespace && shape.nul_at == std::string_view::npos &&
      !json.empty() && CanCopyVerbatim(json)) {
    Check(w_.RawValue(json.data(), json.size(), RootType(json)));
    return true;
  }
  Result<rapidjson::Document> doc = ParseJson(json);
  if (doc.ok()) {
    Value(*doc);
    return true;
  }
  String(json);
  return false;
}

Result<std::string> JsonWriter::Take() const {
  if (!ok_ || !w_.IsComplete()) return MakeError("internal error: unbalanced JSON writer");
  return std::string(view());
}

}  // namespace ae
