// Config: the one typed view of every setting, with where each value came from.
// Built by LoadConfig from layers, lowest first:
//   defaults < user config < profile < project .agentexec/config.toml < environment < -c < flags
// The key table (config_keys.h) drives every layer, so a key is declared once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/exec/approval.h"
#include "engine/model/provider.h"
#include "net/policy.h"
#include "sandbox/mode.h"

#include "base/result.h"

namespace ae {

// One [mcp_servers.NAME] table: a stdio server (`command`) or a streamable-HTTP one (`url`)
// (docs/MCP.md).
struct McpServerConfig {
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::vector<std::string> env_vars;  // variables passed through from our environment
  std::string cwd;
  std::string url;
  std::string bearer_token_env_var;
  std::map<std::string, std::string> http_headers;      // url servers: literal values
  std::map<std::string, std::string> env_http_headers;  // url servers: header -> variable
  bool enabled = true;
  bool required = false;  // a server that fails to start fails the turn
  int64_t startup_timeout_ms = 10000;
  int64_t tool_timeout_ms = 60000;
  std::vector<std::string> enabled_tools;  // only these (when enabled_tools_set)
  bool enabled_tools_set = false;          // absent: every tool; [] : none
  std::vector<std::string> disabled_tools;
};

// One [network.credentials.NAME] table: a secret the egress proxy adds to requests to its hosts
// while commands only ever see a dummy (net/credentials.h).
struct CredentialConfig {
  std::vector<std::string> hosts;
  std::string env;
  std::string header;
};

// The network part of one of codex 0.171's permission profiles, [permissions.NAME.network]
// (the profile `default_permissions` names applies).
struct PermissionNetwork {
  bool enabled = false;
  std::string mode;  // "full", "limited" (read-only); "" as full
  bool allow_local_binding = false;
  std::map<std::string, std::string> domains;  // pattern -> "allow" | "deny" | "none"
};

struct Config {
  std::string model = "gpt-5.5";
  std::string model_provider = "openai";
  std::map<std::string, ProviderSettings> model_providers;  // built-ins plus the user's
  std::string model_reasoning_effort;                       // "" = let the model decide
  std::string model_reasoning_summary;                      // "" = let the model decide
  std::string model_verbosity;                              // "" = let the model decide
  int64_t model_context_window = 0;                         // tokens; 0 = from the model table
  int64_t model_auto_compact_token_limit = 0;               // tokens; 0 = from the model table
  sandbox::Mode sandbox_mode = sandbox::Mode::kReadOnly;
  std::vector<std::string> writable_roots;  // sandbox_workspace_write.*
  bool network_access = false;
  bool exclude_tmpdir_env_var = false;
  bool exclude_slash_tmp = false;
  bool shared_tmp = false;  // sandbox_workspace_write.shared_tmp
  // sandbox_workspace_write.protected_paths (sandbox::Settings::protected_paths, "~/" as given)
  std::vector<std::string> protected_paths = {
      ".vscode/",        ".idea/",        ".claude/",      ".envrc",   "~/.bashrc",
      "~/.bash_profile", "~/.bash_login", "~/.profile",    "~/.zshrc", "~/.zshenv",
      "~/.zprofile",     "~/.gitconfig",  "~/.config/git/"};
  bool require_full_isolation = false;  // top level: degraded sandbox = exit 3
  // [network]: the egress allow-list (net/policy.h), as written; parsed once by the session
  // config. --allow-host adds to `network_allow`.
  std::vector<std::string> network_allow;
  std::vector<std::string> network_deny;
  net::Methods network_methods = net::Methods::kAll;
  bool network_allow_private = false;
  // codex's names for the same policy ([network] of its network proxy), merged with ours: the
  // lists added, the tighter mode, either switch for private addresses.
  std::vector<std::string> network_allowed_domains;
  std::vector<std::string> network_denied_domains;
  net::Methods network_mode = net::Methods::kAll;
  bool network_allow_local_binding = false;
  std::map<std::string, CredentialConfig> network_credentials;
  std::string default_permissions;
  std::map<std::string, PermissionNetwork> permissions;
  ApprovalPolicy approval_policy = ApprovalPolicy::kNever;
  std::string shell_env_inherit = "all";  // shell_environment_policy.*
  std::vector<std::string> shell_env_exclude;
  std::map<std::string, std::string> shell_env_set;
  std::vector<std::string> shell_env_include_only;
  bool shell_env_ignore_default_excludes = false;
  int64_t project_doc_max_bytes = 32 * 1024;
  int64_t command_timeout_ms = 10000;
  int64_t max_turns = 0;   // 0 = no limit
  int64_t max_tokens = 0;  // the thread's input+output tokens; 0 = no limit
  int64_t timeout_ms = 0;  // 0 = no limit
  std::string developer_instructions;
  std::string profile;  // the profile in use, "" = none
  std::map<std::string, McpServerConfig> mcp_servers;
  // Not a key: agentexec's home and $CODEX_HOME when set (absolute), set by LoadLayers. They
  // stay read-only to commands wherever they lie (sandbox::Settings::read_only_dirs).
  std::vector<std::string> homes;

  // Concrete key ("model", "model_providers.openai.base_url") -> where its value came from:
  // "default", "/home/u/.agentexec/config.toml:3", "profile ci
  // (/home/u/.agentexec/config.toml:12)", "env OPENAI_BASE_URL", "-c", "--sandbox", ...
  std::map<std::string, std::string> sources;
  std::vector<std::string> warnings;  // one line each, without a "warning: " prefix
};

// A config with every default, the built-in providers included (openai, ollama, scripted).
Config DefaultConfig();

// A flag that sets a key, in the flag layer (the highest).
struct FlagSetting {
  std::string key;    // e.g. "sandbox_mode"
  std::string value;  // the value as a string, or a TOML literal when `toml` is set
  std::string flag;   // the source shown by --print-config, e.g. "--sandbox"
  bool toml = false;  // parse `value` as TOML (integers, booleans)
};

struct LoadOptions {
  std::string home;                     // absolute $AGENTEXEC_HOME
  std::string process_cwd;              // absolute; -c paths resolve against it
  std::optional<std::string> git_root;  // absolute; its .agentexec/config.toml is the project layer
  bool ignore_user_config = false;
  bool strict = false;                                                   // unknown keys are errors
  std::optional<std::string> profile;                                    // -p
  std::vector<std::string> overrides;                                    // -c key=value, in order
  std::vector<FlagSetting> flags;                                        // in order
  std::function<std::optional<std::string>(const std::string&)> getenv;  // may be empty
};

// Every error names where (file:line:col or the -c text) and what was expected.
Result<Config> LoadConfig(const LoadOptions& options);

// --print-config: one `key = value  # source` line per effective key, sorted; valid TOML.
// Warnings come first as `# warning: ...` comments. Header values and secret-looking
// variables are shown as "<redacted>".
std::string FormatConfig(const Config& config);

}  // namespace ae
