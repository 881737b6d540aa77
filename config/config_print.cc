// --print-config: every effective key with its value and source, as TOML a person can read
// and paste back into a config file.
#include <fmt/format.h>

#include <cctype>
#include <map>

#include "base/duration.h"
#include "base/utf8.h"
#include "config/config.h"
#include "config/config_keys.h"

namespace ae {
namespace {

// Backslash escapes for what TOML refuses raw in a string or a comment (control characters
// other than TAB, and a line break, which would end a comment and start a line of TOML), and
// U+FFFD for bytes that are not UTF-8, which TOML refuses anywhere.
std::string EscapeToml(std::string_view s) {
  std::string out;
  for (char c : SanitizeUtf8(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string QuoteToml(std::string_view s) {
  return "\"" + EscapeToml(s) + "\"";
}

// A comment's text: a warning or a source can hold anything a -c override or a path held.
std::string CommentToml(std::string_view s) {
  return EscapeToml(s);
}

std::string KeySegment(std::string_view s) {
  bool bare = !s.empty();
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') bare = false;
  }
  return bare ? std::string(s) : QuoteToml(s);
}

bool LooksSecret(std::string_view name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"KEY", "SECRET", "TOKEN", "PASS", "AUTH", "CREDENTIAL", "COOKIE"}) {
    if (upper.find(word) != std::string::npos) return true;
  }
  return false;
}

std::string ValueToml(const KeySpec& spec, const ConfigValue& value) {
  if (spec.type == KeyType::kDuration) {
    int64_t ms = std::get<int64_t>(value);
    return ms == 0 ? "0" : QuoteToml(FormatDurationMs(ms));
  }
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<int64_t>(&value)) return fmt::format("{}", *i);
  if (const auto* s = std::get_if<std::string>(&value)) return QuoteToml(*s);
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) {
    std::string out = "[";
    for (const std::string& item : *list) {
      if (out.size() > 1) out += ", ";
      out += QuoteToml(item);
    }
    return out + "]";
  }
  const auto& map = std::get<std::map<std::string, std::string>>(value);
  if (map.empty()) return "{}";
  std::string out = "{ ";
  bool first = true;
  for (const auto& [name, v] : map) {
    if (!first) out += ", ";
    first = false;
    bool hide =
        (spec.flags & kRedactValues) || ((spec.flags & kRedactSecretNames) && LooksSecret(name));
    out += fmt::format("{} = {}", KeySegment(name), hide ? "\"<redacted>\"" : QuoteToml(v));
  }
  return out + " }";
}

}  // namespace

// "model_providers.*.base_url" with id "my.host" -> model_providers."my.host".base_url
std::string ConfigKeyName(std::string_view pattern, const std::string& id) {
  size_t star = pattern.find('*');
  if (star == std::string_view::npos) return std::string(pattern);
  return fmt::format("{}{}{}", pattern.substr(0, star), KeySegment(id), pattern.substr(star + 1));
}

std::string FormatConfig(const Config& config) {
  std::map<std::string, std::string> lines;
  auto add = [&](const KeySpec& spec, const std::string& id) {
    const std::string key = ConfigKeyName(spec.name, id);
    auto source = config.sources.find(key);
    lines[key] =
        fmt::format("{} = {}  # {}", key, ValueToml(spec, spec.get(config, id)),
                    source == config.sources.end() ? "default" : CommentToml(source->second));
  };
  for (const KeySpec& spec : ConfigKeys()) {
    if (spec.type == KeyType::kIgnored || !spec.alias_of.empty() || !spec.get) continue;
    if (spec.name.starts_with("model_providers.*")) {
      for (const auto& [id, provider] : config.model_providers) add(spec, id);
    } else if (spec.name.starts_with("mcp_servers.*")) {
      for (const auto& [id, server] : config.mcp_servers) add(spec, id);
    } else if (spec.name.starts_with("network.credentials.*")) {
      for (const auto& [id, credential] : config.network_credentials) add(spec, id);
    } else if (spec.name.starts_with("permissions.*")) {
      for (const auto& [id, profile] : config.permissions) add(spec, id);
    } else {
      add(spec, "");
    }
  }
  // Warnings first, as comments, so the output stays valid TOML and nothing is missed.
  std::string out;
  for (const std::string& warning : config.warnings)
    out += "# warning: " + CommentToml(warning) + "\n";
  for (const auto& [key, line] : lines) out += line + "\n";
  return out;
}

}  // namespace ae
