#include "config/config_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace ae {
namespace {

// Readers and writers by pointer to member, so each table row names its field once.
template <auto Member>
ConfigValue Get(const Config& c, const std::string&) {
  return c.*Member;
}
template <auto Member>
void Set(Config& c, const std::string&, ConfigValue v) {
  using T = std::remove_cvref_t<decltype(c.*Member)>;
  c.*Member = std::get<T>(std::move(v));
}
// A key of one named table ([model_providers.ID], [mcp_servers.ID], ...): `Map` is the
// Config member holding the tables by id, `Member` the field of one.
template <auto Map, auto Member>
ConfigValue GetIn(const Config& c, const std::string& id) {
  return (c.*Map).at(id).*Member;
}
template <auto Map, auto Member>
void SetIn(Config& c, const std::string& id, ConfigValue v) {
  auto& entry = (c.*Map)[id];
  using T = std::remove_cvref_t<decltype(entry.*Member)>;
  entry.*Member = std::get<T>(std::move(v));
}

// enabled_tools: "not set" (every tool) differs from [] (no tool).
void SetMcpEnabledTools(Config& c, const std::string& id, ConfigValue v) {
  McpServerConfig& s = c.mcp_servers[id];
  s.enabled_tools = std::get<std::vector<std::string>>(std::move(v));
  s.enabled_tools_set = true;
}

// An enum key (sandbox_mode, approval_policy): the config layers hold its name, checked
// against `choices`, which come from the same name table; Config holds the enum.
template <auto Member, const auto& Names>
ConfigValue GetNamed(const Config& c, const std::string&) {
  return std::string(NameOf(Names, c.*Member));
}
template <auto Member, const auto& Names>
void SetNamed(Config& c, const std::string&, ConfigValue v) {
  if (auto value = FromName(Names, std::get<std::string>(v))) c.*Member = *value;
}
// The tables list their values from the tightest to the loosest; a name not in the table
// counts as looser than all of them.
template <const auto& Names>
bool LaterInTable(const ConfigValue& cur, const ConfigValue& next) {
  auto rank = [](const ConfigValue& v) {
    const std::string& name = std::get<std::string>(v);
    auto it =
        std::find_if(Names.begin(), Names.end(), [&](const auto& e) { return name == e.name; });
    return it - Names.begin();
  };
  return rank(next) > rank(cur);
}
bool AddsRoots(const ConfigValue& cur, const ConfigValue& next) {
  const auto& have = std::get<std::vector<std::string>>(cur);
  for (const std::string& root : std::get<std::vector<std::string>>(next)) {
    if (std::find(have.begin(), have.end(), root) == have.end()) return true;
  }
  return false;
}
// A list whose entries each protect something: dropping one loosens, adding one does not.
bool DropsEntries(const ConfigValue& cur, const ConfigValue& next) {
  const auto& want = std::get<std::vector<std::string>>(next);
  for (const std::string& entry : std::get<std::vector<std::string>>(cur)) {
    if (std::find(want.begin(), want.end(), entry) == want.end()) return true;
  }
  return false;
}
bool TrueIsLooser(const ConfigValue& cur, const ConfigValue& next) {
  return std::get<bool>(next) && !std::get<bool>(cur);
}
bool FalseIsLooser(const ConfigValue& cur, const ConfigValue& next) {
  return !std::get<bool>(next) && std::get<bool>(cur);
}

constexpr std::string_view kRedirectsKeys =
    "a project file could send your API key to another host";
constexpr std::string_view kStartsProcesses =
    "a project file could start programs outside the sandbox";
constexpr std::string_view kOpensTheNetwork =
    "a project file could open the network to hosts of its choosing";
constexpr std::string_view kSendsSecrets =
    "a project file could send your secrets to a host of its choosing";

using K = KeyType;

const KeySpec kKeys[] = {
    // Model.
    {"model",
     K::kString,
     "\"gpt-5.5\"",
     "Model slug sent to the provider.",
     {},
     kNoFlags,
     Get<&Config::model>,
     Set<&Config::model>},
    {"model_provider",
     K::kString,
     "\"openai\"",
     "Which model_providers entry to use.",
     {},
     kNoFlags,
     Get<&Config::model_provider>,
     Set<&Config::model_provider>},
    {"model_reasoning_effort", K::kEnum, "\"\"", "Reasoning effort; empty: the model table's.",
     "none,minimal,low,medium,high,xhigh", kNoFlags, Get<&Config::model_reasoning_effort>,
     Set<&Config::model_reasoning_effort>},
    {"model_reasoning_summary", K::kEnum, "\"\"",
     "Reasoning summaries; empty: the model table's (auto where supported).",
     "auto,concise,detailed,none", kNoFlags, Get<&Config::model_reasoning_summary>,
     Set<&Config::model_reasoning_summary>},
    {"model_verbosity", K::kEnum, "\"\"", "Text verbosity; empty: the model table's.",
     "low,medium,high", kNoFlags, Get<&Config::model_verbosity>, Set<&Config::model_verbosity>},
    {"model_context_window",
     K::kInt,
     "0",
     "The model's context window in tokens; 0: from the model table.",
     {},
     kNoFlags,
     Get<&Config::model_context_window>,
     Set<&Config::model_context_window>},
    {"model_auto_compact_token_limit",
     K::kInt,
     "0",
     "Tokens at which the history is compacted; 0: from the model table.",
     {},
     kNoFlags,
     Get<&Config::model_auto_compact_token_limit>,
     Set<&Config::model_auto_compact_token_limit>},
    {"openai_base_url",
     K::kString,
     "",
     "Sets model_providers.openai.base_url.",
     {},
     kNotInProject,
     nullptr,
     nullptr,
     nullptr,
     "model_providers.openai.base_url",
     kRedirectsKeys},
    {"developer_instructions",
     K::kString,
     "\"\"",
     "Extra developer instructions appended to agentexec's own.",
     {},
     kNoFlags,
     Get<&Config::developer_instructions>,
     Set<&Config::developer_instructions>},

    // Providers: built-ins openai, ollama, scripted; users add their own.
    {"model_providers.*.name",
     K::kString,
     "the id",
     "Display name.",
     {},
     kNoFlags,
     GetIn<&Config::model_providers, &ProviderSettings::name>,
     SetIn<&Config::model_providers, &ProviderSettings::name>},
    {"model_providers.*.base_url",
     K::kString,
     "\"\"",
     "API root, e.g. https://api.openai.com/v1.",
     {},
     kNotInProject,
     GetIn<&Config::model_providers, &ProviderSettings::base_url>,
     SetIn<&Config::model_providers, &ProviderSettings::base_url>,
     nullptr,
     {},
     kRedirectsKeys},
    {"model_providers.*.env_key",
     K::kString,
     "\"\"",
     "Environment variable holding the API key; empty: no key.",
     {},
     kNotInProject,
     GetIn<&Config::model_providers, &ProviderSettings::env_key>,
     SetIn<&Config::model_providers, &ProviderSettings::env_key>,
     nullptr,
     {},
     kRedirectsKeys},
    {"model_providers.*.wire_api", K::kEnum, "\"responses\"", "Protocol spoken to the provider.",
     "responses,chat,scripted", kNoFlags,
     GetIn<&Config::model_providers, &ProviderSettings::wire_api>,
     SetIn<&Config::model_providers, &ProviderSettings::wire_api>},
    {"model_providers.*.http_headers",
     K::kStringMap,
     "{}",
     "Extra HTTP headers, literal values.",
     {},
     kRedactValues,
     GetIn<&Config::model_providers, &ProviderSettings::http_headers>,
     SetIn<&Config::model_providers, &ProviderSettings::http_headers>},
    {"model_providers.*.env_http_headers",
     K::kStringMap,
     "{}",
     "Extra HTTP headers: header name -> environment variable holding the value.",
     {},
     kNotInProject,
     GetIn<&Config::model_providers, &ProviderSettings::env_http_headers>,
     SetIn<&Config::model_providers, &ProviderSettings::env_http_headers>,
     nullptr,
     {},
     kRedirectsKeys},
    {"model_providers.*.query_params",
     K::kStringMap,
     "{}",
     "Query parameters added to each URL.",
     {},
     kNoFlags,
     GetIn<&Config::model_providers, &ProviderSettings::query_params>,
     SetIn<&Config::model_providers, &ProviderSettings::query_params>},
    {"model_providers.*.request_max_retries",
     K::kInt,
     "4",
     "Retries of a failed HTTP request (429 and 5xx).",
     {},
     kNoFlags,
     GetIn<&Config::model_providers, &ProviderSettings::request_max_retries>,
     SetIn<&Config::model_providers, &ProviderSettings::request_max_retries>},
    {"model_providers.*.stream_max_retries",
     K::kInt,
     "5",
     "Retries of a whole request whose stream broke, failed or went idle.",
     {},
     kNoFlags,
     GetIn<&Config::model_providers, &ProviderSettings::stream_max_retries>,
     SetIn<&Config::model_providers, &ProviderSettings::stream_max_retries>},
    {"model_providers.*.stream_idle_timeout_ms",
     K::kInt,
     "300000",
     "A stream silent this long is broken.",
     {},
     kNoFlags,
     GetIn<&Config::model_providers, &ProviderSettings::stream_idle_timeout_ms>,
     SetIn<&Config::model_providers, &ProviderSettings::stream_idle_timeout_ms>},
    {"model_providers.*.script",
     K::kPath,
     "\"\"",
     "wire_api scripted: the turns file to replay.",
     {},
     kNoFlags,
     GetIn<&Config::model_providers, &ProviderSettings::script>,
     SetIn<&Config::model_providers, &ProviderSettings::script>},
    {"model_providers.*.env_key_instructions", K::kIgnored, "", "Accepted from codex; unused."},
    {"model_providers.*.requires_openai_auth", K::kIgnored, "", "Accepted from codex; unused."},
    {"model_providers.*.supports_websockets", K::kIgnored, "", "Accepted from codex; unused."},
    {"model_providers.*.experimental_bearer_token", K::kIgnored, "",
     "Accepted from codex; unused (use env_key)."},
    {"model_providers.*.auth", K::kIgnored, "",
     "Accepted from codex (a command that prints the key); unused: the key comes from env_key."},
    {"model_providers.*.aws", K::kIgnored, "",
     "Accepted from codex (SigV4 signing); unused: requests are not signed."},
    {"model_providers.*.model_catalog_url", K::kIgnored, "",
     "Accepted from codex; unused: models come from agentexec's model table."},
    {"model_providers.*.gateway_oauth", K::kIgnored, "",
     "Accepted from codex; unused: no sign-in in a headless run."},
    {"model_providers.*.websocket_connect_timeout_ms", K::kIgnored, "",
     "Accepted from codex; unused: requests use HTTP streaming, not WebSockets."},
    {"model_providers.*.supports_standalone_web_search", K::kIgnored, "",
     "Accepted from codex; unused."},

    // Sandbox and approval.
    {"sandbox_mode", K::kEnum, "\"read-only\"", "What commands may write.",
     kCommaNames<sandbox::kModeNames>, kNoFlags,
     GetNamed<&Config::sandbox_mode, sandbox::kModeNames>,
     SetNamed<&Config::sandbox_mode, sandbox::kModeNames>, LaterInTable<sandbox::kModeNames>},
    {"sandbox_workspace_write.writable_roots",
     K::kPathList,
     "[]",
     "workspace-write: more writable directories.",
     {},
     kNoFlags,
     Get<&Config::writable_roots>,
     Set<&Config::writable_roots>,
     AddsRoots},
    {"sandbox_workspace_write.network_access",
     K::kBool,
     "false",
     "workspace-write: allow network access.",
     {},
     kNoFlags,
     Get<&Config::network_access>,
     Set<&Config::network_access>,
     TrueIsLooser},
    {"sandbox_workspace_write.exclude_tmpdir_env_var",
     K::kBool,
     "false",
     "workspace-write: do not make $TMPDIR writable.",
     {},
     kNoFlags,
     Get<&Config::exclude_tmpdir_env_var>,
     Set<&Config::exclude_tmpdir_env_var>,
     FalseIsLooser},
    {"sandbox_workspace_write.exclude_slash_tmp",
     K::kBool,
     "false",
     "workspace-write: do not make /tmp writable.",
     {},
     kNoFlags,
     Get<&Config::exclude_slash_tmp>,
     Set<&Config::exclude_slash_tmp>,
     FalseIsLooser},
    {"sandbox_workspace_write.protected_paths",
     K::kStringList,
     "[\".vscode/\", \".idea/\", \".claude/\", \".envrc\", \"~/.bashrc\", \"~/.bash_profile\", "
     "\"~/.bash_login\", \"~/.profile\", \"~/.zshrc\", \"~/.zshenv\", \"~/.zprofile\", "
     "\"~/.gitconfig\", \"~/.config/git/\"]",
     "workspace-write: paths other tools run or read without asking, kept read-only inside the "
     "writable roots whether or not they exist (a name: at the top of every root; ~/: in the "
     "home; a trailing / marks a directory). A project config may only add to the list.",
     {},
     kNoFlags,
     Get<&Config::protected_paths>,
     Set<&Config::protected_paths>,
     DropsEntries},
    {"sandbox_workspace_write.shared_tmp",
     K::kBool,
     "false",
     "workspace-write: commands share the host's /tmp and $TMPDIR (as codex's do) instead of "
     "the run's own /tmp, made at start and removed at the end.",
     {},
     kNoFlags,
     Get<&Config::shared_tmp>,
     Set<&Config::shared_tmp>,
     TrueIsLooser},
    // The egress allow-list (docs/SANDBOX.md, "Network by allow-list").
    {"network.allow",
     K::kStringList,
     "[]",
     "workspace-write: the hosts commands may reach through agentexec's proxy, each in its own "
     "network namespace (example.com, *.example.com, an IP literal, each with an optional "
     ":port; a preset such as \"@npm\"). Not empty: only these; empty: as network_access "
     "says. A project config may only remove entries.",
     {},
     kNoFlags,
     Get<&Config::network_allow>,
     Set<&Config::network_allow>,
     AddsRoots},
    {"network.deny",
     K::kStringList,
     "[]",
     "Hosts refused even where network.allow lists them (same patterns; no port: every port). "
     "A project config may only add entries.",
     {},
     kNoFlags,
     Get<&Config::network_deny>,
     Set<&Config::network_deny>,
     DropsEntries},
    {"network.methods", K::kEnum, R"("all")",
     "read-only: plain HTTP GET, HEAD and OPTIONS only, and no CONNECT tunnel.",
     kCommaNames<net::kMethodsNames>, kNoFlags,
     GetNamed<&Config::network_methods, net::kMethodsNames>,
     SetNamed<&Config::network_methods, net::kMethodsNames>, LaterInTable<net::kMethodsNames>},
    {"network.allow_private",
     K::kBool,
     "false",
     "true: allowed hosts may resolve to loopback, private, link-local, CGNAT and metadata "
     "addresses and this host's own (otherwise only those listed as IP literals).",
     {},
     kNoFlags,
     Get<&Config::network_allow_private>,
     Set<&Config::network_allow_private>,
     TrueIsLooser},
    // codex's network proxy reads these names; they add to the keys above.
    {"network.allowed_domains",
     K::kStringList,
     "[]",
     "codex's name: added to network.allow.",
     {},
     kNoFlags,
     Get<&Config::network_allowed_domains>,
     Set<&Config::network_allowed_domains>,
     AddsRoots},
    {"network.denied_domains",
     K::kStringList,
     "[]",
     "codex's name: added to network.deny.",
     {},
     kNoFlags,
     Get<&Config::network_denied_domains>,
     Set<&Config::network_denied_domains>,
     DropsEntries},
    {"network.mode", K::kEnum, R"("full")",
     R"(codex's name: "limited" is network.methods = "read-only".)",
     kCommaNames<net::kCodexModeNames>, kNoFlags,
     GetNamed<&Config::network_mode, net::kCodexModeNames>,
     SetNamed<&Config::network_mode, net::kCodexModeNames>, LaterInTable<net::kCodexModeNames>},
    {"network.allow_local_binding",
     K::kBool,
     "false",
     "codex's name: true is network.allow_private = true.",
     {},
     kNoFlags,
     Get<&Config::network_allow_local_binding>,
     Set<&Config::network_allow_local_binding>,
     TrueIsLooser},
    // The credential broker (docs/SANDBOX.md, "Credentials"): never from a project config.
    {"network.credentials.*.hosts",
     K::kStringList,
     "[]",
     "The hosts the credential goes to, as network.allow patterns (each is allowed too). "
     "Requests to them are seen in the clear: their TLS is terminated with the run's own CA.",
     {},
     kNotInProject,
     GetIn<&Config::network_credentials, &CredentialConfig::hosts>,
     SetIn<&Config::network_credentials, &CredentialConfig::hosts>,
     nullptr,
     {},
     kSendsSecrets},
    {"network.credentials.*.env",
     K::kString,
     "\"\"",
     "The variable of agentexec's environment that holds the secret. Commands see a dummy of "
     "the same form in it; the proxy swaps in the real value in request headers to the hosts "
     "only, and back in their responses.",
     {},
     kNotInProject,
     GetIn<&Config::network_credentials, &CredentialConfig::env>,
     SetIn<&Config::network_credentials, &CredentialConfig::env>,
     nullptr,
     {},
     kSendsSecrets},
    {"network.credentials.*.header",
     K::kString,
     "\"\"",
     "A header the proxy sets on every request to the hosts, \"Name: text with {value}\" "
     "(e.g. \"Authorization: Bearer {value}\"), so commands need not send one.",
     {},
     kNotInProject,
     GetIn<&Config::network_credentials, &CredentialConfig::header>,
     SetIn<&Config::network_credentials, &CredentialConfig::header>,
     nullptr,
     {},
     kSendsSecrets},
    // codex 0.171's permission profiles: the network part of the one default_permissions
    // names, read into the keys above (config/session_config.cc). Never from a project config.
    {"default_permissions",
     K::kString,
     "\"\"",
     "codex's permission profile to apply: its [permissions.NAME.network] adds to the keys "
     "above.",
     {},
     kNotInProject,
     Get<&Config::default_permissions>,
     Set<&Config::default_permissions>,
     nullptr,
     {},
     kOpensTheNetwork},
    {"permissions.*.network.enabled",
     K::kBool,
     "false",
     "codex's name: the profile has network. With allowed domains, only those (through the "
     "proxy, as network.allow); without, the whole network (network_access = true).",
     {},
     kNotInProject,
     GetIn<&Config::permissions, &PermissionNetwork::enabled>,
     SetIn<&Config::permissions, &PermissionNetwork::enabled>,
     nullptr,
     {},
     kOpensTheNetwork},
    {"permissions.*.network.domains",
     K::kStringMap,
     "{}",
     "codex's name: pattern -> \"allow\" (added to network.allow), \"deny\" (to network.deny) "
     "or \"none\".",
     {},
     kNotInProject,
     GetIn<&Config::permissions, &PermissionNetwork::domains>,
     SetIn<&Config::permissions, &PermissionNetwork::domains>,
     nullptr,
     {},
     kOpensTheNetwork},
    {"permissions.*.network.mode",
     K::kString,
     "\"full\"",
     R"(codex's name: "limited" is network.methods = "read-only".)",
     {},
     kNotInProject,
     GetIn<&Config::permissions, &PermissionNetwork::mode>,
     SetIn<&Config::permissions, &PermissionNetwork::mode>,
     nullptr,
     {},
     kOpensTheNetwork},
    {"permissions.*.network.allow_local_binding",
     K::kBool,
     "false",
     "codex's name: true is network.allow_private = true.",
     {},
     kNotInProject,
     GetIn<&Config::permissions, &PermissionNetwork::allow_local_binding>,
     SetIn<&Config::permissions, &PermissionNetwork::allow_local_binding>,
     nullptr,
     {},
     kOpensTheNetwork},
    {"permissions.*.description", K::kIgnored, "", "Accepted from codex; unused."},
    {"permissions.*.workspace_roots", K::kIgnored, "",
     "Accepted from codex; unused: writable roots come from sandbox_mode and writable_roots "
     "(ignoring it can only give less access)."},
    {"permissions.*.filesystem",
     K::kIgnored,
     "",
     "agentexec applies only a permission profile's network part, and a path the profile denies "
     "would be left open: use sandbox_mode, sandbox_workspace_write.writable_roots and "
     "protected_paths.",
     {},
     kRefused},
    {"permissions.*.extends",
     K::kIgnored,
     "",
     "agentexec does not merge permission profiles, and the rules of the profile extended would "
     "be lost: write them in the profile itself.",
     {},
     kRefused},
    {"permissions.*.network.transparent_tcp", K::kIgnored, "",
     "Accepted from codex; unused (commands reach the proxy from their own network namespace)."},
    {"permissions.*.network.proxy_url", K::kIgnored, "",
     "Accepted from codex; unused (one port per run)."},
    {"permissions.*.network.enable_socks5", K::kIgnored, "",
     "Accepted from codex; unused (SOCKS5 shares the proxy's port)."},
    {"permissions.*.network.socks_url", K::kIgnored, "", "Accepted from codex; unused."},
    {"permissions.*.network.enable_socks5_udp", K::kIgnored, "",
     "Accepted from codex; unused (UDP gets nothing)."},
    {"permissions.*.network.allow_upstream_proxy", K::kIgnored, "", "Accepted from codex; unused."},
    {"permissions.*.network.dangerously_allow_non_loopback_proxy", K::kIgnored, "",
     "Accepted from codex; unused (the proxy is reachable from the command's namespace only)."},
    {"permissions.*.network.dangerously_allow_all_unix_sockets", K::kIgnored, "",
     "Accepted from codex; unused (macOS)."},
    {"permissions.*.network.unix_sockets", K::kIgnored, "", "Accepted from codex; unused (macOS)."},
    {"permissions.*.network.mitm", K::kIgnored, "",
     "Accepted from codex; unused (network.credentials terminates TLS where it must)."},
    {"network.enabled", K::kIgnored, "",
     "Accepted from codex; unused (a non-empty network.allow is what turns the proxy on)."},
    {"network.proxy_url", K::kIgnored, "", "Accepted from codex; unused (one port per run)."},
    {"network.admin_url", K::kIgnored, "", "Accepted from codex; unused (no admin API)."},
    {"network.socks_url", K::kIgnored, "", "Accepted from codex; unused (SOCKS5 shares the port)."},
    {"network.enable_socks5", K::kIgnored, "", "Accepted from codex; unused (always served)."},
    {"network.enable_socks5_udp", K::kIgnored, "", "Accepted from codex; unused (UDP is refused)."},
    {"network.allow_upstream_proxy", K::kIgnored, "", "Accepted from codex; unused."},
    {"network.dangerously_allow_non_loopback_proxy", K::kIgnored, "",
     "Accepted from codex; unused (the proxy is only in each command's namespace)."},
    {"network.dangerously_allow_non_loopback_admin", K::kIgnored, "",
     "Accepted from codex; unused."},
    {"network.allow_unix_sockets", K::kIgnored, "", "Accepted from codex (macOS only); unused."},
    {"require_full_isolation",
     K::kBool,
     "false",
     "true: a sandbox without its mount or PID namespace is exit 3, not a warning.",
     {},
     kNoFlags,
     Get<&Config::require_full_isolation>,
     Set<&Config::require_full_isolation>,
     FalseIsLooser},
    {"approval_policy", K::kEnum, "\"never\"",
     "never: denials go back to the model; on-failure: a denied command is retried unsandboxed.",
     kCommaNames<kApprovalPolicyNames>, kInteractiveValues,
     GetNamed<&Config::approval_policy, kApprovalPolicyNames>,
     SetNamed<&Config::approval_policy, kApprovalPolicyNames>, LaterInTable<kApprovalPolicyNames>},

    // What model-run commands see.
    {"shell_environment_policy.inherit", K::kEnum, "\"all\"",
     "Start from all, core (HOME, PATH, ...) or none of agentexec's environment.", "all,core,none",
     kNoFlags, Get<&Config::shell_env_inherit>, Set<&Config::shell_env_inherit>},
    {"shell_environment_policy.exclude",
     K::kStringList,
     "[]",
     "Glob patterns of variables to drop (case-insensitive).",
     {},
     kNoFlags,
     Get<&Config::shell_env_exclude>,
     Set<&Config::shell_env_exclude>},
    {"shell_environment_policy.set",
     K::kStringMap,
     "{}",
     "Variables to set.",
     {},
     kRedactSecretNames,
     Get<&Config::shell_env_set>,
     Set<&Config::shell_env_set>},
    {"shell_environment_policy.include_only",
     K::kStringList,
     "[]",
     "If not empty, keep only variables matching these globs.",
     {},
     kNoFlags,
     Get<&Config::shell_env_include_only>,
     Set<&Config::shell_env_include_only>},
    {"shell_environment_policy.ignore_default_excludes",
     K::kBool,
     "false",
     "Keep variables whose names contain KEY, SECRET or TOKEN.",
     {},
     kNoFlags,
     Get<&Config::shell_env_ignore_default_excludes>,
     Set<&Config::shell_env_ignore_default_excludes>,
     TrueIsLooser},
    {"shell_environment_policy.experimental_use_profile", K::kIgnored, "",
     "Accepted from codex; unused."},
    {"shell_environment_policy.filters",
     K::kIgnored,
     "",
     "agentexec does not apply codex's filters, and dropping them would pass variables they "
     "remove to commands: use exclude and include_only.",
     {},
     kRefused},

    // Limits and budgets.
    {"project_doc_max_bytes",
     K::kInt,
     "32768",
     "Bytes of AGENTS.md read into the prompt.",
     {},
     kNoFlags,
     Get<&Config::project_doc_max_bytes>,
     Set<&Config::project_doc_max_bytes>},
    {"command_timeout_ms",
     K::kInt,
     "10000",
     "Timeout of a command when the model gives none.",
     {},
     kNoFlags,
     Get<&Config::command_timeout_ms>,
     Set<&Config::command_timeout_ms>},
    {"max_turns",
     K::kInt,
     "0",
     "Stop after this many model requests (exit 4); 0: no limit.",
     {},
     kNoFlags,
     Get<&Config::max_turns>,
     Set<&Config::max_turns>},
    {"max_tokens",
     K::kInt,
     "0",
     "Stop when the thread has used this many input+output tokens (exit 4); 0: no limit.",
     {},
     kNoFlags,
     Get<&Config::max_tokens>,
     Set<&Config::max_tokens>},
    {"timeout",
     K::kDuration,
     "0",
     "Stop the run after this long (exit 4), e.g. \"10m\"; 0: no limit.",
     {},
     kNoFlags,
     Get<&Config::timeout_ms>,
     Set<&Config::timeout_ms>},

    // Profiles.
    {"profile",
     K::kString,
     "\"\"",
     "Profile to use when -p is not given.",
     {},
     kNotInProject | kNotInProfile,
     Get<&Config::profile>,
     Set<&Config::profile>,
     nullptr,
     {},
     "a project file may not choose which of your profiles applies"},

    // MCP servers: stored for the MCP client; a project config may not declare them.
    {"mcp_servers.*.command",
     K::kString,
     "\"\"",
     "Program of a stdio MCP server.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::command>,
     SetIn<&Config::mcp_servers, &McpServerConfig::command>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.args",
     K::kStringList,
     "[]",
     "Its arguments.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::args>,
     SetIn<&Config::mcp_servers, &McpServerConfig::args>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.env",
     K::kStringMap,
     "{}",
     "Variables set for it.",
     {},
     kNotInProject | kRedactSecretNames,
     GetIn<&Config::mcp_servers, &McpServerConfig::env>,
     SetIn<&Config::mcp_servers, &McpServerConfig::env>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.cwd",
     K::kPath,
     "\"\"",
     "Its working directory.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::cwd>,
     SetIn<&Config::mcp_servers, &McpServerConfig::cwd>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.url",
     K::kString,
     "\"\"",
     "URL of a streamable-HTTP MCP server.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::url>,
     SetIn<&Config::mcp_servers, &McpServerConfig::url>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.bearer_token_env_var",
     K::kString,
     "\"\"",
     "Variable holding its bearer token.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::bearer_token_env_var>,
     SetIn<&Config::mcp_servers, &McpServerConfig::bearer_token_env_var>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.enabled",
     K::kBool,
     "true",
     "Start it.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::enabled>,
     SetIn<&Config::mcp_servers, &McpServerConfig::enabled>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.startup_timeout_sec",
     K::kDuration,
     "10",
     "Time to start and list its tools (seconds, or \"20s\").",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::startup_timeout_ms>,
     SetIn<&Config::mcp_servers, &McpServerConfig::startup_timeout_ms>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.startup_timeout_ms",
     K::kInt,
     "10000",
     "The same in milliseconds.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::startup_timeout_ms>,
     SetIn<&Config::mcp_servers, &McpServerConfig::startup_timeout_ms>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.tool_timeout_sec",
     K::kDuration,
     "60",
     "Time one tool call may take.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::tool_timeout_ms>,
     SetIn<&Config::mcp_servers, &McpServerConfig::tool_timeout_ms>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.enabled_tools",
     K::kStringList,
     "(all)",
     "Offer only these of its tools.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::enabled_tools>,
     SetMcpEnabledTools,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.disabled_tools",
     K::kStringList,
     "[]",
     "Never offer these of its tools.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::disabled_tools>,
     SetIn<&Config::mcp_servers, &McpServerConfig::disabled_tools>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.env_vars",
     K::kStringList,
     "[]",
     "Variables passed through from agentexec's environment.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::env_vars>,
     SetIn<&Config::mcp_servers, &McpServerConfig::env_vars>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.required",
     K::kBool,
     "false",
     "Fail the turn when it cannot start.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::required>,
     SetIn<&Config::mcp_servers, &McpServerConfig::required>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.http_headers",
     K::kStringMap,
     "{}",
     "Extra HTTP headers for a `url` server, literal values.",
     {},
     kNotInProject | kRedactValues,
     GetIn<&Config::mcp_servers, &McpServerConfig::http_headers>,
     SetIn<&Config::mcp_servers, &McpServerConfig::http_headers>,
     nullptr,
     {},
     kStartsProcesses},
    {"mcp_servers.*.default_tools_approval_mode", K::kIgnored, "",
     "Accepted from codex; a headless run asks no one."},
    {"mcp_servers.*.tools", K::kIgnored, "",
     "Accepted from codex (per-tool approval_mode); a headless run asks no one."},
    {"mcp_servers.*.name", K::kIgnored, "", "Accepted from codex (a legacy display name); unused."},
    {"mcp_servers.*.oauth", K::kIgnored, "", "Accepted from codex; unused: no OAuth sign-in."},
    {"mcp_servers.*.oauth_resource", K::kIgnored, "",
     "Accepted from codex; unused: no OAuth sign-in."},
    {"mcp_servers.*.scopes", K::kIgnored, "", "Accepted from codex; unused: no OAuth sign-in."},
    {"mcp_servers.*.auth", K::kIgnored, "", "Accepted from codex; unused: no OAuth sign-in."},
    {"mcp_servers.*.environment_id", K::kIgnored, "",
     "Accepted from codex; unused: servers run on this host."},
    {"mcp_servers.*.supports_parallel_tool_calls", K::kIgnored, "", "Accepted from codex; unused."},
    {"mcp_servers.*.startup_readiness", K::kIgnored, "",
     "Accepted from codex; unused: startup_timeout_sec bounds the start."},
    {"mcp_servers.*.omit_tools_from", K::kIgnored, "",
     "Accepted from codex (code mode); unused: enabled_tools and disabled_tools choose tools."},
    {"mcp_servers.*.http_headers_helper", K::kIgnored, "",
     "Accepted from codex; unused: no helper program runs, the server gets http_headers and "
     "env_http_headers only."},
    {"mcp_servers.*.bearer_token",
     K::kIgnored,
     "",
     "codex 0.171 refuses it too: put the token in a variable and name it in "
     "bearer_token_env_var.",
     {},
     kRefused},
    {"mcp_servers.*.env_http_headers",
     K::kStringMap,
     "{}",
     "Extra HTTP headers for a `url` server: header name -> environment variable holding the "
     "value.",
     {},
     kNotInProject,
     GetIn<&Config::mcp_servers, &McpServerConfig::env_http_headers>,
     SetIn<&Config::mcp_servers, &McpServerConfig::env_http_headers>,
     nullptr,
     {},
     kStartsProcesses},

    // Codex keys that mean nothing to a headless run: accepted so a codex config.toml loads
    // without warnings.
    {"model_max_output_tokens", K::kIgnored, "", "Accepted from codex; unused."},
    {"model_supports_reasoning_summaries", K::kIgnored, "", "Accepted from codex; unused."},
    {"model_reasoning_summary_format", K::kIgnored, "", "Accepted from codex; unused."},
    {"review_model", K::kIgnored, "", "Accepted from codex; unused."},
    {"hide_agent_reasoning", K::kIgnored, "", "Accepted from codex; unused."},
    {"show_raw_agent_reasoning", K::kIgnored, "", "Accepted from codex; unused."},
    {"disable_response_storage", K::kIgnored, "", "Accepted from codex; unused."},
    {"notify", K::kIgnored, "", "Accepted from codex; unused."},
    {"tui", K::kIgnored, "", "Accepted from codex; unused."},
    {"history", K::kIgnored, "", "Accepted from codex; unused."},
    {"file_opener", K::kIgnored, "", "Accepted from codex; unused."},
    {"projects", K::kIgnored, "", "Accepted from codex (trust_level); unused."},
    {"tools", K::kIgnored, "", "Accepted from codex; unused."},
    {"features", K::kIgnored, "", "Accepted from codex; unused."},
    {"web_search", K::kIgnored, "", "Accepted from codex; unused."},
    {"otel", K::kIgnored, "", "Accepted from codex; unused."},
    {"analytics", K::kIgnored, "", "Accepted from codex; unused."},
    {"feedback", K::kIgnored, "", "Accepted from codex; unused."},
    {"notice", K::kIgnored, "", "Accepted from codex; unused."},
    {"chatgpt_base_url", K::kIgnored, "", "Accepted from codex; unused."},
    {"preferred_auth_method", K::kIgnored, "", "Accepted from codex; unused."},
    {"forced_login_method", K::kIgnored, "", "Accepted from codex; unused."},
    {"forced_chatgpt_workspace_id", K::kIgnored, "", "Accepted from codex; unused."},
    {"cli_auth_credentials_store", K::kIgnored, "", "Accepted from codex; unused."},
    {"mcp_oauth_credentials_store", K::kIgnored, "", "Accepted from codex; unused."},
    {"check_for_update_on_startup", K::kIgnored, "", "Accepted from codex; unused."},
    {"windows_wsl_setup_acknowledged", K::kIgnored, "", "Accepted from codex; unused."},
    {"experimental_instructions_file", K::kIgnored, "", "Accepted from codex; unused."},
    {"experimental_use_exec_command_tool", K::kIgnored, "", "Accepted from codex; unused."},
    {"experimental_use_freeform_apply_patch", K::kIgnored, "", "Accepted from codex; unused."},
    {"include_apply_patch_tool", K::kIgnored, "", "Accepted from codex; unused."},
    {"include_plan_tool", K::kIgnored, "", "Accepted from codex; unused."},
    {"include_view_image_tool", K::kIgnored, "", "Accepted from codex; unused."},
    {"tools_web_search_request", K::kIgnored, "", "Accepted from codex; unused."},
    {"skills", K::kIgnored, "", "Accepted from codex; unused."},
    // Added by codex 0.170/0.171: rollout tracing, how Responses streams are processed, and
    // its code mode; none changes what a headless run sends or does.
    {"rollout_trace", K::kIgnored, "", "Accepted from codex (0.171); unused."},
    {"responses", K::kIgnored, "", "Accepted from codex (0.171); unused."},
    {"code_mode", K::kIgnored, "", "Accepted from codex (0.171); unused."},
    // The rest of codex 0.171's config.toml (its ConfigToml, checked against the binary with
    // --strict-config): the app, the TUI, realtime voice, plugins, subagents, sign-in and local
    // state. Nothing in them changes what a headless run sends or may do.
    {"agents", K::kIgnored, "", "Accepted from codex (subagents); unused."},
    {"allow_symlinked_codex_home", K::kIgnored, "", "Accepted from codex; unused."},
    {"apps", K::kIgnored, "", "Accepted from codex (connectors); unused."},
    {"apps_mcp_product_sku", K::kIgnored, "", "Accepted from codex (connectors); unused."},
    {"audio", K::kIgnored, "", "Accepted from codex (realtime voice); unused."},
    {"realtime", K::kIgnored, "", "Accepted from codex (realtime voice); unused."},
    {"experimental_realtime_start_instructions", K::kIgnored, "",
     "Accepted from codex (realtime voice); unused."},
    {"experimental_realtime_webrtc_call_base_url", K::kIgnored, "",
     "Accepted from codex (realtime voice); unused."},
    {"experimental_realtime_ws_backend_prompt", K::kIgnored, "",
     "Accepted from codex (realtime voice); unused."},
    {"experimental_realtime_ws_base_url", K::kIgnored, "",
     "Accepted from codex (realtime voice); unused."},
    {"experimental_realtime_ws_model", K::kIgnored, "",
     "Accepted from codex (realtime voice); unused."},
    {"experimental_realtime_ws_startup_context", K::kIgnored, "",
     "Accepted from codex (realtime voice); unused."},
    {"auto_review", K::kIgnored, "",
     "Accepted from codex (its automatic reviewer's policy); unused: approvals_reviewer is "
     "refused unless \"user\"."},
    {"background_terminal_max_timeout", K::kIgnored, "",
     "Accepted from codex; unused: write_stdin waits follow agentexec's own bound."},
    {"browser_use", K::kIgnored, "", "Accepted from codex (desktop app); unused."},
    {"computer_use", K::kIgnored, "", "Accepted from codex (desktop app); unused."},
    {"cloud", K::kIgnored, "", "Accepted from codex (Codex Cloud); unused."},
    {"compact_prompt", K::kIgnored, "",
     "Accepted from codex; unused: compaction uses agentexec's own prompt."},
    {"experimental_compact_prompt_file", K::kIgnored, "",
     "Accepted from codex; unused: compaction uses agentexec's own prompt."},
    {"desktop", K::kIgnored, "", "Accepted from codex (desktop app); unused."},
    {"disable_paste_burst", K::kIgnored, "", "Accepted from codex (TUI); unused."},
    {"experimental_thread_store", K::kIgnored, "",
     "Accepted from codex; unused: sessions are files under $AGENTEXEC_HOME."},
    {"experimental_use_unified_exec_tool", K::kIgnored, "",
     "Accepted from codex; unused: exec_command is always offered."},
    {"ghost_snapshot", K::kIgnored, "", "Accepted from codex (a legacy no-op there too)."},
    {"goals", K::kIgnored, "", "Accepted from codex; unused."},
    {"include_apps_instructions", K::kIgnored, "",
     "Accepted from codex; unused: agentexec has no apps block."},
    {"include_collaboration_mode_instructions", K::kIgnored, "",
     "Accepted from codex; unused: agentexec has no collaboration modes."},
    {"include_environment_context", K::kIgnored, "",
     "Accepted from codex; unused: the environment context is always sent."},
    {"include_permissions_instructions", K::kIgnored, "",
     "Accepted from codex; unused: the permissions block is always sent."},
    {"instructions", K::kIgnored, "", "Accepted from codex; unused: use developer_instructions."},
    {"model_instructions_file", K::kIgnored, "",
     "Accepted from codex; unused: agentexec keeps its own base instructions (use "
     "developer_instructions)."},
    {"js_repl_node_path", K::kIgnored, "", "Accepted from codex; unused: no JavaScript REPL."},
    {"js_repl_node_module_dirs", K::kIgnored, "",
     "Accepted from codex; unused: no JavaScript REPL."},
    {"log_dir", K::kIgnored, "", "Accepted from codex; unused: agentexec writes no log files."},
    {"marketplaces", K::kIgnored, "", "Accepted from codex (plugins); unused."},
    {"plugins", K::kIgnored, "", "Accepted from codex (plugins); unused."},
    {"mcp_enterprise_managed_auth", K::kIgnored, "",
     "Accepted from codex; unused: no OAuth sign-in."},
    {"mcp_oauth_callback_port", K::kIgnored, "", "Accepted from codex; unused: no OAuth sign-in."},
    {"mcp_oauth_callback_url", K::kIgnored, "", "Accepted from codex; unused: no OAuth sign-in."},
    {"mcp_optional_startup_grace_ms", K::kIgnored, "",
     "Accepted from codex; unused: startup_timeout_sec bounds each server."},
    {"memories", K::kIgnored, "", "Accepted from codex; unused: no memories."},
    {"model_auto_compact_token_limit_scope", K::kIgnored, "",
     "Accepted from codex; unused: the whole context counts against the limit."},
    {"model_post_turn_compact_threshold_percent", K::kIgnored, "",
     "Accepted from codex; unused: compaction follows model_auto_compact_token_limit."},
    {"model_catalog_json", K::kIgnored, "",
     "Accepted from codex; unused: models come from agentexec's model table."},
    {"orchestrator", K::kIgnored, "", "Accepted from codex; unused."},
    {"personality", K::kIgnored, "", "Accepted from codex; unused."},
    {"plan_mode_reasoning_effort", K::kIgnored, "",
     "Accepted from codex (the TUI's plan mode); unused."},
    {"project_doc_fallback_filenames", K::kIgnored, "",
     "Accepted from codex; unused: only AGENTS.override.md and AGENTS.md are read."},
    {"project_root_markers", K::kIgnored, "",
     "Accepted from codex; unused: the project is the git repository."},
    {"responses_api_metadata", K::kIgnored, "", "Accepted from codex; unused (not sent)."},
    {"service_tier", K::kIgnored, "",
     "Accepted from codex; unused: no service_tier is sent, the provider's default applies."},
    {"sqlite_home", K::kIgnored, "", "Accepted from codex; unused: no state database."},
    {"suppress_unstable_features_warning", K::kIgnored, "", "Accepted from codex; unused."},
    {"thread_unload_delay_secs", K::kIgnored, "", "Accepted from codex (app server); unused."},
    {"tool_output_token_limit", K::kIgnored, "",
     "Accepted from codex; unused: tool output is cut to agentexec's own budget."},
    {"tool_suggest", K::kIgnored, "", "Accepted from codex; unused."},
    {"windows", K::kIgnored, "", "Accepted from codex (Windows sandbox); unused."},
    // Refused unless codex's default: agentexec cannot honour another value, and ignoring it
    // would loosen what the user set or change what the run does.
    {"allow_login_shell",
     K::kIgnored,
     "true",
     "agentexec runs every command in a login shell (bash -lc), so false cannot be honoured.",
     {},
     kRefused},
    {"approvals_reviewer",
     K::kIgnored,
     "\"user\"",
     "Accepted from codex; unused: agentexec asks no reviewer. approval_policy alone decides: "
     "never retries nothing, on-failure lets agentexec retry a command it saw the sandbox "
     "deny.",
     {}},
    {"oss_provider",
     K::kIgnored,
     "\"ollama\"",
     "--oss runs against ollama only (as --local-provider lmstudio, refused).",
     {},
     kRefused},
    {"hooks",
     K::kIgnored,
     "{}",
     "agentexec runs no hooks, and a hook meant to vet commands would be skipped.",
     {},
     kRefused},
};

std::vector<std::string_view> Split(std::string_view name) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    parts.push_back(name.substr(start, dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

// Does `spec` match `path` on its first path.size() segments? Sets *id for a "*".
bool MatchPrefix(std::string_view spec_name, const std::vector<std::string>& path, size_t* spec_len,
                 std::string* id) {
  std::vector<std::string_view> parts = Split(spec_name);
  *spec_len = parts.size();
  if (parts.size() < path.size()) return false;
  for (size_t i = 0; i < path.size(); ++i) {
    if (parts[i] == "*") {
      if (id) *id = path[i];
    } else if (parts[i] != path[i]) {
      return false;
    }
  }
  return true;
}

// Optimal string alignment distance: a swapped pair counts as one edit ("modle" -> "model").
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::span<const KeySpec> ConfigKeys() {
  return kKeys;
}

const KeySpec* MatchKey(const std::vector<std::string>& path, std::string* id) {
  for (const KeySpec& spec : kKeys) {
    size_t len;
    std::string matched_id;
    if (MatchPrefix(spec.name, path, &len, &matched_id) && len == path.size()) {
      if (id) *id = matched_id;
      return &spec;
    }
  }
  return nullptr;
}

bool IsKeyPrefix(const std::vector<std::string>& path) {
  for (const KeySpec& spec : kKeys) {
    size_t len;
    if (MatchPrefix(spec.name, path, &len, nullptr) && len > path.size()) return true;
  }
  return false;
}

std::string SuggestKey(const std::vector<std::string>& path) {
  if (path.empty()) return "";
  std::vector<std::string> parent(path.begin(), path.end() - 1);
  const std::string& typed = path.back();
  std::string best;
  size_t best_distance = typed.size() <= 3 ? 1 : typed.size() <= 8 ? 2 : 3;
  for (const KeySpec& spec : kKeys) {
    size_t len;
    if (!MatchPrefix(spec.name, parent, &len, nullptr) || len <= parent.size()) continue;
    std::string_view candidate = Split(spec.name)[parent.size()];
    if (candidate == "*") continue;
    size_t distance = EditDistance(typed, candidate);
    if (distance <= best_distance && (best.empty() || distance < best_distance)) {
      best = std::string(candidate);
      best_distance = distance;
    }
  }
  return best;
}

std::string ChoicesText(const KeySpec& spec) {
  std::string out;
  for (char c : spec.choices) out += c == ',' ? std::string(", ") : std::string(1, c);
  return out;
}

namespace {

bool IsTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool HoldsControl(std::string_view text, bool tab_allowed) {
  for (unsigned char c : text) {
    if (c == '\t' && tab_allowed) continue;
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// `text` for an error message: control bytes shown as \xNN.
std::string Visible(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> HttpMapProblem(std::string_view pattern,
                                          const std::map<std::string, std::string>& map) {
  const bool headers = pattern == "model_providers.*.http_headers";
  const bool env_headers = pattern == "model_providers.*.env_http_headers";
  const bool query = pattern == "model_providers.*.query_params";
  if (!headers && !env_headers && !query) return std::nullopt;
  for (const auto& [name, value] : map) {
    if (headers || env_headers) {
      if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
            return IsTokenChar(static_cast<unsigned char>(c));
          })) {
        return fmt::format(
            "header name \"{}\" is not a token (letters, digits and !#$%&'*+-.^_`|~ only)",
            Visible(name));
      }
    } else if (HoldsControl(name, false)) {
      return fmt::format("query parameter name \"{}\" holds a control character", Visible(name));
    }
    if (HoldsControl(value, headers)) {
      return fmt::format("the value of {} \"{}\" holds a control character (CR, LF, ...)",
                         query ? "query parameter" : "header", name);
    }
  }
  return std::nullopt;
}

bool IsCredentialHeader(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::string_view kCredentials[] = {
      "authorization", "proxy-authorization", "cookie",         "api-key",
      "x-api-key",     "openai-organization", "openai-project", "x-goog-api-key"};
  return std::find(std::begin(kCredentials), std::end(kCredentials), lower) !=
         std::end(kCredentials);
}

}  // namespace ae
