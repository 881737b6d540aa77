#include "config/session_config.h"

#include "engine/model/model_table.h"

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "base/base64.h"
#include "base/duration.h"
#include "base/json.h"
#include "base/path.h"
#include "base/read_file.h"
#include "config/git_check.h"
#include "engine/output_schema/output_schema.h"

namespace ae {
namespace {

// The image's type from its first bytes, not its name.
const char* ImageMime(std::string_view data) {
  if (data.starts_with("\x89PNG\r\n\x1a\n")) return "image/png";
  if (data.starts_with("\xFF\xD8\xFF")) return "image/jpeg";
  if (data.starts_with("GIF87a") || data.starts_with("GIF89a")) return "image/gif";
  if (data.size() >= 12 && data.starts_with("RIFF") && data.substr(8, 4) == "WEBP") {
    return "image/webp";
  }
  return nullptr;
}

std::string SourceOf(const Config& config, const std::string& key) {
  auto it = config.sources.find(key);
  return it == config.sources.end() ? "default" : it->second;
}

// Why `url` cannot be a provider's base_url, or "": it needs an http(s) scheme and a host.
std::string UnusableUrl(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "it has no scheme (expected http:// or https://)";
  std::string scheme = url.substr(0, scheme_end);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "http" && scheme != "https") {
    return fmt::format("the scheme `{}` is not http or https", scheme);
  }
  std::string authority = url.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
  std::string host = authority;
  if (!host.empty() && host.front() == '[') {
    host = host.substr(0, host.find(']') + 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  if (host.empty() || host == "[]") return "it has no host";
  for (char c : authority) {
    if (std::isspace(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) < 0x20) {
      return "the host contains white space";
    }
  }
  return {};
}

Result<ProviderInfo> ResolveProvider(const Config& config) {
  const std::string& id = config.model_provider;
  auto it = config.model_providers.find(id);
  if (it == config.model_providers.end()) {
    std::string known;
    for (const auto& [name, provider] : config.model_providers) {
      known += known.empty() ? name : ", " + name;
    }
    return MakeError(fmt::format(
        "model_provider '{}' (from {}) is not defined: add a [model_providers.{}] table, or use "
        "one of {}",
        id, SourceOf(config, "model_provider"), id, known));
  }
  const ProviderSettings& p = it->second;
  ProviderInfo info;
  static_cast<ProviderSettings&>(info) = p;
  info.id = id;
  info.request_max_retries = std::min<int64_t>(p.request_max_retries, kMaxProviderRetries);
  info.stream_max_retries = std::min<int64_t>(p.stream_max_retries, kMaxProviderRetries);
  info.stream_idle_timeout_ms = ClampDurationMs(p.stream_idle_timeout_ms);
  while (info.base_url.size() > 1 && info.base_url.back() == '/') info.base_url.pop_back();
  if (p.wire_api == "scripted") {
    if (p.script.empty()) {
      return MakeError(
          fmt::format("model provider '{}' replays a script but none is set: set "
                      "model_providers.{}.script (or AGENTEXEC_SCRIPT) to a turns file",
                      id, id));
    }
    if (::access(p.script.c_str(), R_OK) != 0) {
      return MakeError(fmt::format("model_providers.{}.script {}: cannot read: {}", id, p.script,
                                   std::strerror(errno)));
    }
  } else if (p.base_url.empty()) {
    return MakeError(fmt::format(
        "model provider '{}' has no base_url: set model_providers.{}.base_url", id, id));
  } else if (std::string why = UnusableUrl(p.base_url); !why.empty()) {
    const std::string key = fmt::format("model_providers.{}.base_url", id);
    return MakeError(fmt::format("{} (from {}) `{}` is not a usable URL: {}", key,
                                 SourceOf(config, key), p.base_url, why));
  }
  return info;
}

Result<std::string> ReadOutputSchema(const std::string& given, const std::string& path) {
  Result<std::string> text = ReadNamedFile(path);
  if (!text.ok()) {
    return MakeError(fmt::format("--output-schema {}: cannot read: {}", given, text.message()));
  }
  rapidjson::Document doc;
  if (std::optional<JsonParseError> bad = ParseJsonInto(*text, &doc)) {
    return MakeError(fmt::format("--output-schema {}: not a JSON object ({} at byte offset {})",
                                 given, bad->reason, bad->offset));
  }
  if (!doc.IsObject())
    return MakeError(fmt::format("--output-schema {}: not a JSON object", given));
  // Refused here, before any token is spent, rather than by the service (or never, on the
  // chat wire) after the turn started.
  if (Status strict = CheckStrictOutputSchema(*text); !strict.ok()) {
    return MakeError(fmt::format("--output-schema {}: {}", given, strict.message()));
  }
  return ToJson(doc);
}

Result<std::string> ReadImage(const std::string& given, const std::string& path) {
  Result<std::string> data = ReadNamedFile(path);
  if (!data.ok())
    return MakeError(fmt::format("--image {}: cannot read: {}", given, data.message()));
  const char* mime = ImageMime(*data);
  if (!mime) return MakeError(fmt::format("--image {}: not a PNG, JPEG, GIF or WebP image", given));
  return fmt::format("data:{};base64,{}", mime, Base64Encode(*data));
}

Result<std::string> ResolveCwd(const std::optional<std::string>& cd, const Environment& env) {
  if (env.cwd.empty()) {
    return MakeError("cannot find the current directory (was it deleted?); use -C DIR");
  }
  std::string dir = env.cwd;
  if (cd) dir = ResolvedPath(env.cwd, *cd);
  // Name it the way the user did: "-C build" rather than the absolute path.
  const std::string name = cd ? "-C " + *cd : "working directory " + dir;
  char resolved[PATH_MAX];
  if (!::realpath(dir.c_str(), resolved)) {
    return MakeError(fmt::format("{}: {}", name, std::strerror(errno)));
  }
  struct stat st {};
  if (::stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return MakeError(fmt::format("{}: {}", name, std::strerror(ENOTDIR)));
  }
  return std::string(resolved);
}

}  // namespace

Environment Environment::FromProcess() {
  Environment env;
  env.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf)) env.cwd = buf;
  return env;
}

namespace {

// [mcp_servers.*] -> the engine's specs, in name order: stdio (`command`) or streamable HTTP
// (`url`). The variables a url server's token and headers come from are credentials: no
// command sees them.
void AddMcpServers(const Config& config, const SessionInputs& inputs, SessionConfig& session) {
  auto getenv = [&](const std::string& name) -> std::optional<std::string> {
    return inputs.getenv ? inputs.getenv(name) : std::nullopt;
  };
  for (const auto& [name, s] : config.mcp_servers) {
    if (!s.enabled) continue;
    if (s.command.empty() && s.url.empty()) {
      session.warnings.push_back(
          fmt::format("MCP server '{}' has neither `command` nor `url`; it is not started", name));
      continue;
    }
    if (!s.command.empty() && !s.url.empty()) {
      session.warnings.push_back(fmt::format(
          "MCP server '{}' has both `command` and `url`; it is not started (give one)", name));
      continue;
    }
    McpServerSpec spec;
    spec.name = name;
    spec.url = s.url;
    spec.bearer_token_env_var = s.bearer_token_env_var;
    if (!s.bearer_token_env_var.empty()) {
      spec.bearer_token = getenv(s.bearer_token_env_var);
      session.shell_env.credential_vars.push_back(s.bearer_token_env_var);
    }
    spec.http_headers = s.http_headers;
    for (const auto& [header, var] : s.env_http_headers) {
      if (std::optional<std::string> value = getenv(var)) spec.http_headers[header] = *value;
      session.shell_env.credential_vars.push_back(var);
    }
    spec.command = s.command;
    spec.args = s.args;
    spec.env = s.env;
    spec.env_vars = s.env_vars;
    spec.cwd = s.cwd;
    spec.startup_timeout_ms = ClampDurationMs(s.startup_timeout_ms);
    spec.tool_timeout_ms = ClampDurationMs(s.tool_timeout_ms);
    if (s.enabled_tools_set) spec.enabled_tools = s.enabled_tools;
    spec.disabled_tools = s.disabled_tools;
    spec.required = s.required;
    session.mcp_servers.push_back(std::move(spec));
  }
}

}  // namespace

sandbox::Settings SandboxSettingsFrom(const Config& config, const std::string& cwd,
                                      const std::string& process_cwd,
                                      const std::vector<std::string>& add_dirs) {
  sandbox::Settings sb;
  sb.mode = config.sandbox_mode;
  for (const std::string& root : config.writable_roots) {
    sb.writable_roots.push_back(ResolvedPath(cwd, root));
  }
  for (const std::string& dir : add_dirs) sb.add_dirs.push_back(ResolvedPath(process_cwd, dir));
  sb.network_access = config.network_access;
  sb.exclude_tmpdir_env_var = config.exclude_tmpdir_env_var;
  sb.exclude_slash_tmp = config.exclude_slash_tmp;
  sb.shared_tmp = config.shared_tmp;
  // "~/" is the home of the user agentexec runs as; without one, such entries protect nothing.
  const char* home = std::getenv("HOME");
  for (const std::string& entry : config.protected_paths) {
    if (entry.rfind("~/", 0) != 0) {
      sb.protected_paths.push_back(entry);
    } else if (home != nullptr && home[0] == '/') {
      sb.protected_paths.push_back(std::string(home) + entry.substr(1));
    }
  }
  sb.require_full_isolation = config.require_full_isolation;
  sb.read_only_dirs = config.homes;
  return sb;
}

Result<net::Policy> NetworkPolicyFrom(const Config& config,
                                      const std::vector<std::string>& allow_hosts,
                                      sandbox::Settings* settings) {
  std::vector<std::string> allow = config.network_allow;
  allow.insert(allow.end(), config.network_allowed_domains.begin(),
               config.network_allowed_domains.end());
  // A credential's hosts are reachable: it is useless otherwise.
  for (const auto& [name, credential] : config.network_credentials) {
    allow.insert(allow.end(), credential.hosts.begin(), credential.hosts.end());
  }
  allow.insert(allow.end(), allow_hosts.begin(), allow_hosts.end());
  std::vector<std::string> deny = config.network_deny;
  deny.insert(deny.end(), config.network_denied_domains.begin(),
              config.network_denied_domains.end());
  // codex 0.171's permission profile, when default_permissions names one with a network
  // part. codex enforces its domains only with features.network_proxy; here a profile that
  // lists any is enforced: closed rather than open.
  bool network_access = config.network_access;
  bool read_only = config.network_methods == net::Methods::kReadOnly ||
                   config.network_mode == net::Methods::kReadOnly;
  bool allow_private = config.network_allow_private || config.network_allow_local_binding;
  if (auto profile = config.permissions.find(config.default_permissions);
      !config.default_permissions.empty() && profile != config.permissions.end() &&
      profile->second.enabled) {
    const PermissionNetwork& p = profile->second;
    const std::string where = fmt::format("permissions.{}.network", profile->first);
    bool listed = false;
    for (const auto& [pattern, action] : p.domains) {
      if (action == "allow") {
        allow.push_back(pattern);
        listed = true;
      } else if (action == "deny") {
        deny.push_back(pattern);
      } else if (action != "none") {
        return MakeError(fmt::format(R"({}.domains: '{}' is "{}", not "allow", "deny" or "none")",
                                     where, pattern, action));
      }
    }
    if (p.mode == "limited") {
      read_only = true;
    } else if (!p.mode.empty() && p.mode != "full") {
      return MakeError(fmt::format(R"({}.mode: "{}" is not "full" or "limited")", where, p.mode));
    }
    allow_private = allow_private || p.allow_local_binding;
    if (!listed) network_access = true;
    settings->network_access = network_access;
  }
  Result<std::vector<net::HostRule>> allowed = net::ParseRules(allow, /*deny=*/false);
  if (!allowed.ok()) return MakeError("network.allow: " + allowed.message());
  Result<std::vector<net::HostRule>> denied = net::ParseRules(deny, /*deny=*/true);
  if (!denied.ok()) return MakeError("network.deny: " + denied.message());
  net::Policy policy;
  policy.allow = std::move(*allowed);
  policy.deny = std::move(*denied);
  policy.methods = read_only ? net::Methods::kReadOnly : net::Methods::kAll;
  policy.allow_private = allow_private;
  if (policy.active() && config.sandbox_mode == sandbox::Mode::kWorkspaceWrite && !network_access) {
    // Each command's namespace is its own, so any port is free there; one out of the way of
    // the ports test servers and dev servers commonly take.
    std::random_device random;
    settings->proxy_port = static_cast<uint16_t>(20000 + random() % 20000);
  }
  return policy;
}

Result<SessionConfig> BuildSessionConfig(const Config& config, const SessionInputs& inputs) {
  SessionConfig session;
  session.cwd = inputs.cwd;
  Result<ProviderInfo> provider = ResolveProvider(config);
  if (!provider.ok()) return provider.error();
  session.provider = std::move(*provider);

  session.model.model = config.model;
  session.model.reasoning_effort = config.model_reasoning_effort;
  // "none" means no summaries: the field is left out (the service knows no "none").
  if (config.model_reasoning_summary != "none") {
    session.model.reasoning_summary = config.model_reasoning_summary;
  }
  session.model.verbosity = config.model_verbosity;
  const ModelInfo info = LookupModel(config.model);
  session.model.reasoning = info.reasoning;
  session.model.context_window =
      config.model_context_window > 0 ? config.model_context_window : info.context_window;
  session.model.auto_compact_token_limit = config.model_auto_compact_token_limit > 0
                                               ? config.model_auto_compact_token_limit
                                               : session.model.context_window * 9 / 10;
  if (!info.reasoning) session.model.reasoning_effort.clear();
  if (!info.supports_reasoning_summaries) session.model.reasoning_summary.clear();
  if (!info.supports_verbosity) session.model.verbosity.clear();

  session.sandbox = SandboxSettingsFrom(config, inputs.cwd, inputs.process_cwd, inputs.add_dirs);
  Result<net::Policy> network = NetworkPolicyFrom(config, inputs.allow_hosts, &session.sandbox);
  if (!network.ok()) return network.error();
  session.network = std::move(*network);

  session.approval = config.approval_policy;

  ShellEnvPolicy& env = session.shell_env;
  env.inherit = config.shell_env_inherit == "none"   ? ShellEnvPolicy::Inherit::kNone
                : config.shell_env_inherit == "core" ? ShellEnvPolicy::Inherit::kCore
                                                     : ShellEnvPolicy::Inherit::kAll;
  env.ignore_default_excludes = config.shell_env_ignore_default_excludes;
  env.exclude = config.shell_env_exclude;
  env.set = config.shell_env_set;
  env.include_only = config.shell_env_include_only;
  if (!session.provider.env_key.empty()) env.credential_vars.push_back(session.provider.env_key);
  for (const auto& [header, var] : session.provider.env_http_headers) {
    env.credential_vars.push_back(var);
  }
  // A brokered credential's variable: commands get its dummy (engine/exec/credential_broker.h),
  // and agentexec forgets the real value once the broker has read it.
  for (const auto& [name, credential] : config.network_credentials) {
    session.credentials.push_back({name, credential.hosts, credential.env, credential.header});
    if (!credential.env.empty()) env.credential_vars.push_back(credential.env);
  }

  session.command_timeout_ms = ClampDurationMs(config.command_timeout_ms);
  session.max_turns = static_cast<int>(std::min<int64_t>(config.max_turns, INT_MAX));
  session.max_tokens = config.max_tokens;
  session.project_doc_max_bytes = static_cast<size_t>(config.project_doc_max_bytes);
  session.developer_instructions = config.developer_instructions;
  session.warnings = config.warnings;

  if (inputs.output_schema) {
    Result<std::string> schema = ReadOutputSchema(
        *inputs.output_schema, ResolvedPath(inputs.process_cwd, *inputs.output_schema));
    if (!schema.ok()) return schema.error();
    session.output_schema_json = std::move(*schema);
  }
  for (const std::string& image : inputs.images) {
    Result<std::string> url = ReadImage(image, ResolvedPath(inputs.process_cwd, image));
    if (!url.ok()) return url.error();
    session.images.push_back(std::move(*url));
  }
  AddMcpServers(config, inputs, session);
  return session;
}

namespace {

// A user coming from codex keeps their settings in $CODEX_HOME/config.toml (default
// ~/.codex): when that file exists and agentexec's own does not, say once per run where
// agentexec looks, rather than run silently without them. "" otherwise.
std::string CodexConfigNote(const std::string& home, const std::string& codex_home,
                            const std::string& user_home) {
  std::string dir = !codex_home.empty()  ? codex_home
                    : !user_home.empty() ? user_home + "/.codex"
                                         : std::string();
  if (dir.empty()) return {};
  struct stat st;
  const std::string codex_file = dir + "/config.toml";
  const std::string ours = home + "/config.toml";
  if (::stat(codex_file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  if (::lstat(ours.c_str(), &st) == 0) return {};
  std::error_code ec;
  if (std::filesystem::equivalent(dir, home, ec)) return {};
  return fmt::format(
      "codex's config {} is not read: agentexec reads {} (the same keys; copy or link the file "
      "there, or set AGENTEXEC_HOME={})",
      codex_file, ours, dir);
}

// Messages from LoadLayers are printed as they are: "error: ..." like the command line's.
Error Prefixed(const Error& error) {
  return MakeError("error: " + error.message);
}

}  // namespace

void ApplyModelTable(Config& config) {
  const ModelInfo info = LookupModel(config.model);
  const std::string source =
      info.known ? fmt::format("model table ({})", info.slug) : std::string("fallback metadata");
  auto fill = [&](std::string& value, const char* key, const std::string& table_value) {
    if (value.empty() && !table_value.empty()) {
      value = table_value;
      config.sources[key] = source;
    }
  };
  auto drop = [&](std::string& value, const char* key, const char* what) {
    if (value.empty()) return;
    if (config.sources.contains(key)) {
      config.warnings.push_back(
          fmt::format("{} = \"{}\" is ignored: model `{}` does not support {}", key, value,
                      config.model, what));
    }
    value.clear();
    config.sources[key] = source;
  };
  if (info.reasoning) {
    fill(config.model_reasoning_effort, "model_reasoning_effort", info.default_reasoning_effort);
  } else {
    drop(config.model_reasoning_effort, "model_reasoning_effort", "reasoning");
  }
  if (info.supports_reasoning_summaries) {
    fill(config.model_reasoning_summary, "model_reasoning_summary", info.default_reasoning_summary);
  } else {
    drop(config.model_reasoning_summary, "model_reasoning_summary", "reasoning summaries");
  }
  if (info.supports_verbosity) {
    fill(config.model_verbosity, "model_verbosity", info.default_verbosity);
  } else {
    drop(config.model_verbosity, "model_verbosity", "verbosity");
  }
  if (config.model_context_window <= 0 && info.context_window > 0) {
    config.model_context_window = info.context_window;
    config.sources["model_context_window"] = source;
  }
  if (config.model_auto_compact_token_limit <= 0 && config.model_context_window > 0) {
    config.model_auto_compact_token_limit = config.model_context_window * 9 / 10;
    config.sources["model_auto_compact_token_limit"] = source;
  }
  auto provider = config.model_providers.find(config.model_provider);
  const bool scripted =
      provider != config.model_providers.end() && provider->second.wire_api == "scripted";
  if (!info.known && !scripted) config.warnings.push_back(UnknownModelWarning(config.model));
}

Result<std::string> KeepResumedModel(const std::string& session_provider,
                                     const std::string& session_model, const Config& config,
                                     SessionConfig& session) {
  const bool keep_provider = !config.sources.contains("model_provider") &&
                             !session_provider.empty() && session_provider != session.provider.id;
  if (keep_provider) {
    Config resumed = config;
    resumed.model_provider = session_provider;
    resumed.sources["model_provider"] = "the resumed session";
    Result<ProviderInfo> provider = ResolveProvider(resumed);
    if (!provider.ok()) return MakeError("error: " + provider.message());
    session.provider = std::move(*provider);
  }
  const bool keep_model = !config.sources.contains("model") && !session_model.empty();
  if (keep_model) session.model.model = session_model;
  auto from = [](bool kept, const Config& c, const char* key) {
    return kept ? std::string("the session") : SourceOf(c, key);
  };
  return fmt::format(
      "resume: model {} (from {}), provider {} (from {})", session.model.model,
      from(keep_model, config, "model"), session.provider.id,
      from(keep_provider || !config.sources.contains("model_provider"), config, "model_provider"));
}

Result<LoadedLayers> LoadLayers(const LayerRequest& request, const Environment& env) {
  LoadedLayers layers;
  auto getenv = [&](const char* name) -> std::string {
    std::optional<std::string> v = env.getenv ? env.getenv(name) : std::nullopt;
    return v.value_or("");
  };
  std::string home = getenv("AGENTEXEC_HOME");
  if (home.empty() && !getenv("HOME").empty()) home = getenv("HOME") + "/.agentexec";
  if (home.empty() && request.needs_home) {
    return MakeError(
        "error: cannot find the agentexec home: set AGENTEXEC_HOME (or HOME), or run with "
        "--ephemeral --ignore-user-config, which need none");
  }
  if (!home.empty()) layers.home = ResolvedPath(env.cwd, home);

  Result<std::string> cwd = ResolveCwd(request.cd, env);
  if (!cwd.ok()) return Prefixed(cwd.error());
  layers.cwd = *cwd;

  Result<Config> config = LoadConfig({.home = layers.home,
                                      .process_cwd = env.cwd,
                                      .git_root = FindGitRoot(layers.cwd),
                                      .ignore_user_config = request.ignore_user_config,
                                      .strict = request.strict,
                                      .profile = request.profile,
                                      .overrides = request.overrides,
                                      .flags = request.flags,
                                      .getenv = env.getenv});
  if (!config.ok()) return Prefixed(config.error());
  layers.config = std::move(*config);
  if (!request.ignore_user_config && !layers.home.empty()) {
    if (std::string note = CodexConfigNote(layers.home, getenv("CODEX_HOME"), getenv("HOME"));
        !note.empty()) {
      layers.config.warnings.push_back(std::move(note));
    }
  }
  // The homes' config.toml name the providers and MCP servers later runs start unconfined: a
  // command must not write them, even when they lie in a writable root (a CI cache). A run
  // without a home (--ephemeral --ignore-user-config) has none to protect.
  if (!layers.home.empty()) layers.config.homes.push_back(layers.home);
  if (std::string codex_home = getenv("CODEX_HOME"); !codex_home.empty()) {
    layers.config.homes.push_back(ResolvedPath(env.cwd, codex_home));
  }
  return layers;
}

}  // namespace ae
