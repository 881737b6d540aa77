// The key table: every configuration key once, with its type, default, help and how to read
// and write it in Config. The loader, --print-config, and docs/CONFIG.md all follow it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.h"

namespace ae {

using ConfigValue = std::variant<bool, int64_t, std::string, std::vector<std::string>,
                                 std::map<std::string, std::string>>;

enum class KeyType {
  kString,
  kEnum,  // a string from `choices`
  kBool,
  kInt,       // non-negative integer
  kDuration,  // "10m", "1h30m", or an integer number of seconds; stored as ms; 0 = none
  kPath,      // a string; relative paths resolve against the file's directory (or cwd for -c)
  kStringList,
  kPathList,
  kStringMap,  // a table of strings
  kIgnored,    // a codex key that means nothing headless: accepted silently, subtree and all
};

enum KeyFlags : unsigned {
  kNoFlags = 0,
  kNotInProject = 1 << 0,       // a project config may not set it (ignored with a warning)
  kNotInProfile = 1 << 1,       // a profile may not set it
  kRedactValues = 1 << 2,       // --print-config hides every value of the map
  kRedactSecretNames = 1 << 3,  // --print-config hides values whose name looks secret
  kInteractiveValues = 1 << 4,  // approval: untrusted/on-request -> never (files) or error
  // kIgnored keys only: a codex key agentexec cannot honour where ignoring it would loosen the
  // policy or change what was asked. An error naming `help` as the reason, unless the value is
  // codex's default as `default_text` spells it (what agentexec does anyway).
  kRefused = 1 << 5,
};

struct KeySpec {
  std::string_view name;  // dotted; "*" stands for one id segment: "model_providers.*.base_url"
  KeyType type;
  std::string_view default_text;  // as shown in docs ("" = empty)
  std::string_view help;
  std::string_view choices = {};  // kEnum: comma separated
  unsigned flags = kNoFlags;
  ConfigValue (*get)(const Config&, const std::string& id) = nullptr;
  void (*set)(Config&, const std::string& id, ConfigValue value) = nullptr;
  // Project-config guard: true when `next` is looser than `current` (the project's value is
  // then ignored with a warning). nullptr: the project may set the key freely.
  bool (*looser)(const ConfigValue& current, const ConfigValue& next) = nullptr;
  std::string_view alias_of = {};  // writing this key writes that one (same "*" id)
  std::string_view not_in_project_reason = {};
};

std::span<const KeySpec> ConfigKeys();

// The spec whose name matches `path` exactly ("*" matches any segment), and the id the "*"
// stood for (empty when the name has none).
const KeySpec* MatchKey(const std::vector<std::string>& path, std::string* id);
// True when some key lies strictly below `path` (so a table there is walked into).
bool IsKeyPrefix(const std::vector<std::string>& path);
// The closest known name for the last segment of an unknown `path`, or "".
std::string SuggestKey(const std::vector<std::string>& path);
// "read-only, workspace-write, danger-full-access"
std::string ChoicesText(const KeySpec& spec);

// What reaches the model request from config is checked, in every layer: for the key pattern
// `pattern` ("model_providers.*.http_headers", ".env_http_headers", ".query_params"; any other
// pattern passes) the problem with `map`, e.g. `header name "x y" is not a token`; nullopt when
// it is fine. Header names must be RFC 9110 tokens; no name or value may hold CR, LF or another
// control character (a header value may hold a tab).
std::optional<std::string> HttpMapProblem(std::string_view pattern,
                                          const std::map<std::string, std::string>& map);

// A header that carries or selects a credential (Authorization, Cookie, api-key, the OpenAI
// organization and project, ...), compared case-insensitively. A project config may neither
// add nor replace one.
bool IsCredentialHeader(std::string_view name);

}  // namespace ae
