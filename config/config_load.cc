// LoadConfig: the config layers applied lowest first through one walker, so every
// layer gets the same key table, type checks, positions and source labels.
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>

#include "base/duration.h"
#include "base/path.h"
#include "config/config.h"
#include "config/config_io.h"
#include "config/config_keys.h"

namespace ae {

std::string ConfigKeyName(std::string_view pattern, const std::string& id);  // config_print.cc

namespace {

enum class Layer { kUser, kProfile, kProject, kEnv, kOverride, kFlag };

// Where a value came from, for error positions and --print-config.
struct Origin {
  Layer layer;
  std::string file;                         // file layers: the path as shown to the user
  std::string profile;                      // kProfile: the profile's name
  std::string label;                        // non-file layers: "env OPENAI_BASE_URL", "-c", ...
  std::string context;                      // non-file layers: error prefix, e.g. "-c model=x"
  std::string base_dir;                     // relative paths resolve against it
  std::vector<std::string> display_prefix;  // {"profiles", "ci"} inside [profiles.ci]
};

std::string Where(const Origin& o, const toml::source_region& r) {
  if (o.file.empty()) return o.context;
  return fmt::format("{}:{}:{}", o.file, r.begin.line, r.begin.column);
}

std::string SourceLabel(const Origin& o, const toml::source_region& r) {
  switch (o.layer) {
    case Layer::kUser:
    case Layer::kProject:
      return fmt::format("{}:{}", o.file, r.begin.line);
    case Layer::kProfile:
      return fmt::format("profile {} ({}:{})", o.profile, o.file, r.begin.line);
    default:
      return o.label;
  }
}

bool IsBareKey(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

std::string Display(const Origin& o, const std::vector<std::string>& path) {
  std::string out;
  auto add = [&](const std::string& part) {
    if (!out.empty()) out += '.';
    out += IsBareKey(part) ? part : fmt::format("\"{}\"", part);
  };
  for (const std::string& part : o.display_prefix) add(part);
  for (const std::string& part : path) add(part);
  return out;
}

// How a wrong value is described in "expects X, got Y".
std::string Describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return fmt::format("'{}'", *node.value<std::string>());
    case toml::node_type::integer:
      return fmt::format("{}", *node.value<int64_t>());
    case toml::node_type::floating_point:
      return fmt::format("{}", *node.value<double>());
    case toml::node_type::boolean:
      return *node.value<bool>() ? "true" : "false";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date or time";
  }
}

std::string Expected(const KeySpec& spec) {
  switch (spec.type) {
    case KeyType::kString:
    case KeyType::kPath:
      return "a string";
    case KeyType::kEnum:
      return "one of " + ChoicesText(spec);
    case KeyType::kBool:
      return "true or false";
    case KeyType::kInt:
      return "a non-negative integer";
    case KeyType::kDuration:
      return "a duration such as \"90s\", \"10m\" or \"1h30m\", or a number of seconds";
    case KeyType::kStringList:
    case KeyType::kPathList:
      return "an array of strings";
    case KeyType::kStringMap:
      return "a table of strings";
    case KeyType::kIgnored:
      break;
  }
  return "nothing";
}

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// "a.b.c" -> {"a", "b", "c"}: our own key names, which never need quoting.
std::vector<std::string> SplitDots(std::string_view name) {
  std::vector<std::string> parts;
  for (size_t dot; (dot = name.find('.')) != std::string_view::npos; name.remove_prefix(dot + 1)) {
    parts.emplace_back(name.substr(0, dot));
  }
  parts.emplace_back(name);
  return parts;
}

struct ParsedFile {
  bool exists = false;
  toml::table table;
};

// False when `value` cannot be a TOML value, so that the parser need not be asked: a bare word
// (a model or a provider name) or a path, whose parse error would be thrown. The first exception a
// process throws costs milliseconds (the unwinder sorts its tables), most of a run's start-up.
// A TOML value starts with a quote, a bracket, a brace, a sign or a digit, or is one of the
// words true, false, inf and nan.
bool MayBeTomlValue(std::string_view value) {
  if (value.empty()) return false;
  const auto first = static_cast<unsigned char>(value.front());
  if (std::isdigit(first) != 0 ||
      std::string_view("\"'[{+-").find(value.front()) != std::string_view::npos) {
    return true;
  }
  for (std::string_view word : {"true", "false", "inf", "nan"}) {
    if (value.substr(0, word.size()) != word) continue;
    if (value.size() == word.size()) return true;
    const char next = value[word.size()];
    if (next == ' ' || next == '\t' || next == '#') return true;
  }
  return false;
}

// A missing file is not an error; anything else that stops us reading it is. With `beneath`,
// the file is read beneath that directory (config/config_io.h).
Result<ParsedFile> ReadToml(const std::string& path, const std::string& beneath = "") {
  ParsedFile out;
  Result<std::optional<std::string>> text = ReadFileIfExists(path, beneath);
  if (!text.ok()) return MakeError(fmt::format("{}: cannot read: {}", path, text.message()));
  if (!text->has_value()) return out;
  try {
    out.table = toml::parse(std::string_view(**text), std::string_view(path));
  } catch (const toml::parse_error& e) {
    // toml++ sometimes quotes the newline it stopped at; keep the message on one line.
    std::string description;
    for (char c : e.description()) {
      description += c == '\n'   ? std::string("\\n")
                     : c == '\r' ? std::string("\\r")
                                 : std::string(1, c);
    }
    return MakeError(fmt::format("{}:{}:{}: {}", path, e.source().begin.line,
                                 e.source().begin.column, Trim(description)));
  }
  out.exists = true;
  return out;
}

// A refused key written with codex's default (`true`, `"user"`) asks for what agentexec does.
bool IsCodexDefault(const KeySpec& spec, const toml::node& node) {
  if (spec.default_text.empty()) return false;
  if (const toml::value<bool>* b = node.as_boolean()) {
    return spec.default_text == (b->get() ? "true" : "false");
  }
  if (const toml::value<std::string>* s = node.as_string()) {
    return spec.default_text == "\"" + s->get() + "\"";
  }
  if (const toml::table* t = node.as_table()) return spec.default_text == "{}" && t->empty();
  return false;
}

class Loader {
 public:
  Loader(const LoadOptions& options, const std::string& user_file)
      : options_(options), user_file_(user_file), config_(DefaultConfig()) {}

  Config& config() { return config_; }

  Status Walk(const toml::table& table, std::vector<std::string>& path, const Origin& origin) {
    // toml++ keeps keys sorted; walk them in file order so messages follow the file.
    std::vector<std::pair<const toml::key*, const toml::node*>> entries;
    for (auto&& [key, node] : table) entries.emplace_back(&key, &node);
    std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
      const toml::source_position& pa = a.first->source().begin;
      const toml::source_position& pb = b.first->source().begin;
      return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
    });
    for (const auto& [key, node] : entries) {
      path.push_back(std::string(key->str()));
      Status status = Visit(path, *node, key->source(), origin);
      path.pop_back();
      if (!status.ok()) return status;
    }
    return {};
  }

  // One key (and, for tables that hold keys, everything under it).
  Status Visit(std::vector<std::string>& path, const toml::node& node,
               const toml::source_region& key_region, const Origin& origin) {
    const std::string display = Display(origin, path);
    const std::string where = Where(origin, key_region);
    if (path[0] == "profiles") {
      if (origin.layer == Layer::kUser) return {};  // read when the profile is chosen
      Warn(fmt::format("{}: ignored '{}': profiles are read from {} only", where, display,
                       user_file_));
      return {};
    }
    if (origin.layer == Layer::kProject && path.size() == 1 && path[0] == "mcp_servers") {
      Warn(fmt::format(
          "{}: ignored '{}': a project config may not declare MCP servers (a project file "
          "could start programs outside the sandbox)",
          where, display));
      return {};
    }
    std::string id;
    if (const KeySpec* spec = MatchKey(path, &id)) {
      if (spec->type == KeyType::kIgnored) {
        if (!(spec->flags & kRefused) || IsCodexDefault(*spec, node)) return {};
        return MakeError(fmt::format("{}: '{}' is not supported: {}", where, display, spec->help));
      }
      return Assign(*spec, id, node, display, origin);
    }
    if (IsKeyPrefix(path)) {
      if (const toml::table* table = node.as_table()) return Walk(*table, path, origin);
      return MakeError(fmt::format("{}: '{}' expects a table, got {}", Where(origin, node.source()),
                                   display, Describe(node)));
    }
    std::string message = fmt::format("{}: unknown key '{}'", where, display);
    std::string suggestion = SuggestKey(path);
    if (!suggestion.empty()) message += fmt::format(" (did you mean '{}'?)", suggestion);
    if (options_.strict) return MakeError(message);
    Warn(message);
    return {};
  }

  void Warn(std::string message) { config_.warnings.push_back(std::move(message)); }

 private:
  Status Assign(const KeySpec& named, std::string id, const toml::node& node,
                const std::string& display, const Origin& origin) {
    const std::string where = Where(origin, node.source());
    if (origin.layer == Layer::kProject && (named.flags & kNotInProject)) {
      Warn(fmt::format("{}: ignored '{}': a project config may not set it ({})", where, display,
                       named.not_in_project_reason));
      return {};
    }
    if (origin.layer == Layer::kProfile && (named.flags & kNotInProfile)) {
      Warn(fmt::format("{}: ignored '{}': a profile cannot choose a profile", where, display));
      return {};
    }
    const KeySpec* spec = &named;
    std::string concrete_pattern(named.name);
    if (!named.alias_of.empty()) {
      concrete_pattern = std::string(named.alias_of);
      std::vector<std::string> target = SplitDots(named.alias_of);
      spec = MatchKey(target, &id);
    }

    Result<ConfigValue> value = Convert(*spec, node, display, where, origin);
    if (!value.ok()) return value.error();
    if (auto* map = std::get_if<std::map<std::string, std::string>>(&*value)) {
      if (std::optional<std::string> problem = HttpMapProblem(concrete_pattern, *map)) {
        return MakeError(fmt::format("{}: '{}': {}", where, display, *problem));
      }
      // A project file (which a command or a pull request can write) may neither add nor
      // replace a credential header, nor drop one set elsewhere.
      if (origin.layer == Layer::kProject && concrete_pattern == "model_providers.*.http_headers") {
        const auto current = std::get<std::map<std::string, std::string>>(spec->get(config_, id));
        for (auto it = map->begin(); it != map->end();) {
          auto kept = current.find(it->first);
          if (IsCredentialHeader(it->first) &&
              (kept == current.end() || kept->second != it->second)) {
            Warn(
                fmt::format("{}: ignored header '{}' in '{}': a project config may not set a "
                            "credential header",
                            where, it->first, display));
            it = map->erase(it);
          } else {
            ++it;
          }
        }
        for (const auto& [name, header_value] : current) {
          if (IsCredentialHeader(name)) map->emplace(name, header_value);
        }
      }
    }
    if (origin.layer == Layer::kProject && spec->looser) {
      ConfigValue current = spec->get(config_, id);
      if (spec->looser(current, *value)) {
        const std::string key = ConfigKeyName(concrete_pattern, id);
        auto it = config_.sources.find(key);
        Warn(fmt::format(
            "{}: ignored '{}': a project config may not loosen it (keeping {} from {})", where,
            display, ValueText(current), it == config_.sources.end() ? "default" : it->second));
        return {};
      }
    }
    spec->set(config_, id, std::move(*value));
    config_.sources[ConfigKeyName(concrete_pattern, id)] = SourceLabel(origin, node.source());
    return {};
  }

  // The effective value of a guarded key, shown in the "may not loosen" warning.
  static std::string ValueText(const ConfigValue& v) {
    if (const auto* s = std::get_if<std::string>(&v)) return fmt::format("\"{}\"", *s);
    if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
    if (const auto* list = std::get_if<std::vector<std::string>>(&v)) {
      std::string out;
      for (const std::string& item : *list) out += (out.empty() ? "" : ", ") + ("\"" + item + "\"");
      return "[" + out + "]";
    }
    return "the current value";
  }

  // Paths, commands and headers reach C APIs that stop at the first NUL: a value holding one
  // would mean one thing here and another there. (toml++ bounds the nesting.)
  static bool HoldsNul(const toml::node& node) {
    if (const toml::value<std::string>* s = node.as_string()) {
      return s->get().find('\0') != std::string::npos;
    }
    if (const toml::array* array = node.as_array()) {
      for (const toml::node& item : *array) {
        if (HoldsNul(item)) return true;
      }
    }
    if (const toml::table* table = node.as_table()) {
      for (auto&& [k, v] : *table) {
        if (k.str().find('\0') != std::string_view::npos || HoldsNul(v)) return true;
      }
    }
    return false;
  }

  Result<ConfigValue> Convert(const KeySpec& spec, const toml::node& node,
                              const std::string& display, const std::string& where,
                              const Origin& origin) {
    auto type_error = [&]() {
      return MakeError(fmt::format("{}: '{}' expects {}, got {}", where, display, Expected(spec),
                                   Describe(node)));
    };
    if (HoldsNul(node)) {
      return MakeError(fmt::format("{}: '{}' holds a NUL byte", where, display));
    }
    switch (spec.type) {
      case KeyType::kString:
      case KeyType::kPath: {
        if (!node.is_string()) return type_error();
        std::string s = *node.value<std::string>();
        if (spec.type == KeyType::kPath) s = ResolvePath(s, origin);
        return ConfigValue(std::move(s));
      }
      case KeyType::kEnum:
        if (!node.is_string()) return type_error();
        return ConvertEnum(spec, *node.value<std::string>(), display, where, origin, type_error());
      case KeyType::kBool:
        if (!node.is_boolean()) return type_error();
        return ConfigValue(*node.value<bool>());
      case KeyType::kInt:
        if (!node.is_integer() || *node.value<int64_t>() < 0) return type_error();
        return ConfigValue(*node.value<int64_t>());
      case KeyType::kDuration: {
        if (node.is_integer() && *node.value<int64_t>() >= 0 &&
            *node.value<int64_t>() < INT64_MAX / 1000) {
          return ConfigValue(ClampDurationMs(*node.value<int64_t>() * 1000));
        }
        if (!node.is_string()) return type_error();
        Result<int64_t> ms = ParseDurationMs(*node.value<std::string>());
        if (!ms.ok()) return type_error();
        return ConfigValue(*ms);
      }
      case KeyType::kStringList:
      case KeyType::kPathList: {
        const toml::array* array = node.as_array();
        if (!array) return type_error();
        std::vector<std::string> list;
        for (const toml::node& item : *array) {
          if (!item.is_string()) return type_error();
          std::string s = *item.value<std::string>();
          if (spec.type == KeyType::kPathList) s = ResolvePath(s, origin);
          list.push_back(std::move(s));
        }
        return ConfigValue(std::move(list));
      }
      case KeyType::kStringMap: {
        const toml::table* table = node.as_table();
        if (!table) return type_error();
        std::map<std::string, std::string> map;
        for (auto&& [k, v] : *table) {
          if (!v.is_string()) return type_error();
          map[std::string(k.str())] = *v.value<std::string>();
        }
        return ConfigValue(std::move(map));
      }
      case KeyType::kIgnored:
        break;
    }
    return type_error();
  }

  // One of the key's choices. The interactive approval policies codex knows fall back to
  // `never` from a file and `-c`, as codex runs them; from a flag they are an error.
  Result<ConfigValue> ConvertEnum(const KeySpec& spec, std::string s, const std::string& display,
                                  const std::string& where, const Origin& origin,
                                  Error type_error) {
    if ((spec.flags & kInteractiveValues) && (s == "untrusted" || s == "on-request")) {
      // `-a` is refused by the CLI parser before it gets here, so this error only guards a
      // flag added later.
      if (origin.layer == Layer::kFlag) {
        return MakeError(
            fmt::format("{}: '{}' value '{}' needs someone to answer prompts, and agentexec is "
                        "headless; use never or on-failure",
                        where, display, s));
      }
      Warn(
          fmt::format("{}: '{}' value '{}' needs someone to answer prompts, and agentexec is "
                      "headless; using 'never'",
                      where, display, s));
      return ConfigValue(std::string("never"));
    }
    for (std::string_view choice : SplitChoices(spec.choices)) {
      if (s == choice) return ConfigValue(std::move(s));
    }
    return type_error;
  }

  static std::vector<std::string_view> SplitChoices(std::string_view choices) {
    std::vector<std::string_view> out;
    while (!choices.empty()) {
      size_t comma = choices.find(',');
      out.push_back(choices.substr(0, comma));
      if (comma == std::string_view::npos) break;
      choices.remove_prefix(comma + 1);
    }
    return out;
  }

  // "~/x" is under $HOME; other relative paths are under the file's directory (or the
  // working directory for the command line and environment).
  std::string ResolvePath(const std::string& path, const Origin& origin) {
    if (path.empty()) return path;
    if (path == "~" || path.starts_with("~/")) {
      std::optional<std::string> home = options_.getenv ? options_.getenv("HOME") : std::nullopt;
      if (!home || home->empty()) return ResolvedPath("", path);  // no home: left as written
      return ResolvedPath(*home, path.substr(path.size() > 1 ? 2 : 1));
    }
    return ResolvedPath(origin.base_dir, path);
  }

  const LoadOptions& options_;
  std::string user_file_;
  Config config_;
};

// A -c key=value, parsed once up front so a bad one fails before anything else.
struct Override {
  std::string text;  // as given, for messages
  std::vector<std::string> path;
  toml::table holder;  // owns `value`
  const toml::node* value = nullptr;
};

Result<Override> ParseOverride(const std::string& text) {
  Override o;
  o.text = text;
  size_t eq = text.find('=');
  if (eq == std::string::npos) {
    return MakeError(fmt::format("-c {}: expected key=value", text));
  }
  std::string key = Trim(std::string_view(text).substr(0, eq));
  std::string value = Trim(std::string_view(text).substr(eq + 1));
  // The key goes through the TOML parser too, so quoted segments ("a.b") work.
  bool valid = true;
  try {
    toml::table parsed = toml::parse(std::string_view(key + " = 0"));
    const toml::table* level = &parsed;
    while (valid) {
      if (level->size() != 1) {
        valid = false;
        break;
      }
      auto it = level->begin();
      o.path.push_back(std::string(it->first.str()));
      level = it->second.as_table();
      if (!level) break;
    }
  } catch (const toml::parse_error&) {
    valid = false;
  }
  if (!valid || key.empty()) {
    return MakeError(fmt::format("-c {}: '{}' is not a valid key", text, key));
  }
  // The value is TOML when it parses as exactly one value, else the raw text as a string.
  if (MayBeTomlValue(value)) {
    try {
      toml::table parsed = toml::parse(std::string_view("v = " + value));
      if (parsed.size() == 1 && parsed.contains("v")) o.holder = std::move(parsed);
    } catch (const toml::parse_error&) {
    }
  }
  if (o.holder.empty()) o.holder.insert("v", value);
  o.value = o.holder.get("v");
  return o;
}

}  // namespace

Config DefaultConfig() {
  Config c;
  ProviderSettings openai;
  openai.name = "OpenAI";
  openai.base_url = "https://api.openai.com/v1";
  openai.env_key = "OPENAI_API_KEY";
  openai.wire_api = "responses";
  c.model_providers["openai"] = openai;
  ProviderSettings ollama;
  ollama.name = "Ollama";
  ollama.base_url = "http://localhost:11434/v1";
  ollama.wire_api = "chat";
  c.model_providers["ollama"] = ollama;
  ProviderSettings scripted;
  scripted.name = "Scripted";
  scripted.wire_api = "scripted";
  c.model_providers["scripted"] = scripted;
  return c;
}

namespace {

// The layers, lowest first; each adds what it sets to the loader's Config.

Status LoadUserLayer(const LoadOptions& options, const std::string& user_file, Loader& loader,
                     ParsedFile& user) {
  if (options.ignore_user_config) return {};
  Result<ParsedFile> parsed = ReadToml(user_file);
  if (!parsed.ok()) return parsed.error();
  user = std::move(*parsed);
  if (!user.exists) return {};
  Origin origin{Layer::kUser, user_file};
  origin.base_dir = options.home;
  std::vector<std::string> path;
  return loader.Walk(user.table, path, origin);
}

// -p, else the last -c profile=..., else `profile` from the user config.
std::string ChooseProfile(const LoadOptions& options, const std::vector<Override>& overrides,
                          Loader& loader) {
  std::string profile = loader.config().profile;
  for (const Override& o : overrides) {
    if (o.path == std::vector<std::string>{"profile"} && o.value->is_string()) {
      profile = *o.value->value<std::string>();
    }
  }
  if (options.profile) {
    profile = *options.profile;
    loader.config().profile = profile;
    loader.config().sources["profile"] = "--profile";
  }
  return profile;
}

// [profiles.NAME] in the user config, then $AGENTEXEC_HOME/NAME.config.toml; one must exist.
Status LoadProfileLayer(const LoadOptions& options, const std::string& user_file,
                        const ParsedFile& user, const std::string& profile, Loader& loader) {
  if (profile.find('/') != std::string::npos || profile == "." || profile == "..") {
    return MakeError(fmt::format("profile '{}' is not a valid profile name", profile));
  }
  const std::string profile_file = options.home + "/" + profile + ".config.toml";
  if (options.ignore_user_config) {
    return MakeError(fmt::format("profile '{}' not found: --ignore-user-config skips {} and {}",
                                 profile, user_file, profile_file));
  }
  std::vector<std::string> path;
  bool found = false;
  if (const toml::node* profiles = user.table.get("profiles")) {
    const toml::table* table = profiles->as_table();
    if (!table) {
      return MakeError(fmt::format("{}:{}:{}: 'profiles' expects a table, got {}", user_file,
                                   profiles->source().begin.line, profiles->source().begin.column,
                                   Describe(*profiles)));
    }
    if (const toml::node* entry = table->get(profile)) {
      const toml::table* body = entry->as_table();
      if (!body) {
        return MakeError(fmt::format("{}:{}:{}: 'profiles.{}' expects a table, got {}", user_file,
                                     entry->source().begin.line, entry->source().begin.column,
                                     profile, Describe(*entry)));
      }
      Origin origin{Layer::kProfile, user_file, profile};
      origin.base_dir = options.home;
      origin.display_prefix = {"profiles", profile};
      if (Status s = loader.Walk(*body, path, origin); !s.ok()) return s.error();
      found = true;
    }
  }
  Result<ParsedFile> file = ReadToml(profile_file);
  if (!file.ok()) return file.error();
  if (file->exists) {
    Origin origin{Layer::kProfile, profile_file, profile};
    origin.base_dir = options.home;
    if (Status s = loader.Walk(file->table, path, origin); !s.ok()) return s.error();
    found = true;
  }
  if (!found) {
    return MakeError(fmt::format("profile '{}' not found: no [profiles.{}] in {} and no {}",
                                 profile, profile, user_file, profile_file));
  }
  return {};
}

// The project config at the git root, unless that directory is the home itself.
Status LoadProjectLayer(const LoadOptions& options, Loader& loader) {
  if (!options.git_root) return {};
  const std::string dir = *options.git_root + "/.agentexec";
  std::error_code ec;
  if (std::filesystem::equivalent(dir, options.home, ec)) return {};
  const std::string project_file = dir + "/config.toml";
  Result<ParsedFile> file = ReadToml(project_file, *options.git_root);
  if (!file.ok()) return file.error();
  if (!file->exists) return {};
  Origin origin{Layer::kProject, project_file};
  origin.base_dir = *options.git_root;
  std::vector<std::string> path;
  return loader.Walk(file->table, path, origin);
}

// The environment: a documented few.
Status LoadEnvLayer(const LoadOptions& options, Loader& loader) {
  if (!options.getenv) return {};
  const struct {
    const char* var;
    std::vector<std::string> key;
  } env_keys[] = {
      {"OPENAI_BASE_URL", {"openai_base_url"}},
      {"AGENTEXEC_SCRIPT", {"model_providers", "scripted", "script"}},
  };
  for (const auto& e : env_keys) {
    std::optional<std::string> value = options.getenv(e.var);
    if (!value || value->empty()) continue;
    Origin origin{Layer::kEnv};
    origin.label = fmt::format("env {}", e.var);
    origin.context = origin.label;
    origin.base_dir = options.process_cwd;
    toml::value<std::string> node(*value);
    std::vector<std::string> key = e.key;
    if (Status s = loader.Visit(key, node, {}, origin); !s.ok()) return s.error();
  }
  return {};
}

// -c, in order.
Status LoadOverrideLayer(const LoadOptions& options, std::vector<Override>& overrides,
                         Loader& loader) {
  for (Override& o : overrides) {
    Origin origin{Layer::kOverride};
    origin.label = "-c";
    origin.context = "-c " + o.text;
    origin.base_dir = options.process_cwd;
    if (Status s = loader.Visit(o.path, *o.value, {}, origin); !s.ok()) return s.error();
  }
  return {};
}

// The flags that set a key (--model, --sandbox, ...), last.
Status LoadFlagLayer(const LoadOptions& options, Loader& loader) {
  for (const FlagSetting& flag : options.flags) {
    Origin origin{Layer::kFlag};
    origin.label = flag.flag;
    origin.context = fmt::format("{} {}", flag.flag, flag.value);
    origin.base_dir = options.process_cwd;
    toml::table holder;
    if (flag.toml && MayBeTomlValue(flag.value)) {
      try {
        holder = toml::parse(std::string_view("v = " + flag.value));
      } catch (const toml::parse_error&) {
      }
    }
    if (!holder.contains("v")) holder.insert("v", flag.value);
    std::vector<std::string> key = SplitDots(flag.key);
    if (Status s = loader.Visit(key, *holder.get("v"), {}, origin); !s.ok()) return s.error();
  }
  return {};
}

}  // namespace

Result<Config> LoadConfig(const LoadOptions& options) {
  const std::string user_file = options.home + "/config.toml";
  Loader loader(options, user_file);

  // Every -c is parsed up front, so a bad one fails before any file is read.
  std::vector<Override> overrides;
  for (const std::string& text : options.overrides) {
    Result<Override> o = ParseOverride(text);
    if (!o.ok()) return o.error();
    overrides.push_back(std::move(*o));
  }

  ParsedFile user;
  if (Status s = LoadUserLayer(options, user_file, loader, user); !s.ok()) return s.error();
  if (const std::string profile = ChooseProfile(options, overrides, loader); !profile.empty()) {
    Status s = LoadProfileLayer(options, user_file, user, profile, loader);
    if (!s.ok()) return s.error();
  }
  if (Status s = LoadProjectLayer(options, loader); !s.ok()) return s.error();
  if (Status s = LoadEnvLayer(options, loader); !s.ok()) return s.error();
  if (Status s = LoadOverrideLayer(options, overrides, loader); !s.ok()) return s.error();
  if (Status s = LoadFlagLayer(options, loader); !s.ok()) return s.error();

  Config config = std::move(loader.config());
  for (auto& [id, provider] : config.model_providers) {
    if (provider.name.empty()) provider.name = id;
  }
  return config;
}

}  // namespace ae
