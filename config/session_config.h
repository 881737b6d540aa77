// From environment + files + the command line's overrides to a session: the configuration
// layers (LoadLayers) and the SessionConfig they give (BuildSessionConfig). It knows nothing
// of the command line itself: the front door (runner/load_run.h) hands it a LayerRequest.
// Every error here is a usage or configuration error (exit 2), its message ready for stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "config/config.h"
#include "engine/session.h"

namespace ae {

// The process's surroundings, injectable so tests need not touch the real environment.
struct Environment {
  std::function<std::optional<std::string>(const std::string&)> getenv;
  std::string cwd;  // the process's working directory, absolute

  static Environment FromProcess();  // ::getenv and getcwd()
};

// What a command asks of the layers: the command line's choices, as overrides of the files.
struct LayerRequest {
  std::optional<std::string> cd;       // -C DIR, as given
  std::optional<std::string> profile;  // -p
  std::vector<std::string> overrides;  // -c key=value, in order
  std::vector<FlagSetting> flags;      // the options that set a key
  bool ignore_user_config = false;
  bool strict = false;  // --strict-config
  // False for a run that reads no user config and writes no session (a container with
  // neither AGENTEXEC_HOME nor HOME set): it may go without a home.
  bool needs_home = true;
};

// What every command reads before it does anything: $AGENTEXEC_HOME, the working directory
// (-C) and the configuration layers (user, profile, project at the git root, environment, -c,
// flags). Shared by exec and `agentexec sandbox`, so both read the same keys the same way.
// Errors are ready for stderr ("error: ...").
struct LoadedLayers {
  std::string home;  // absolute $AGENTEXEC_HOME
  std::string cwd;   // absolute, canonical working directory
  Config config;
};
Result<LoadedLayers> LoadLayers(const LayerRequest& request, const Environment& env);

// The sandbox settings a configuration asks for: sandbox_mode, sandbox_workspace_write.*
// (writable_roots relative to `cwd`), require_full_isolation, and the --add-dir directories
// (relative to `process_cwd`).
// The egress policy of `config`'s [network] keys plus --allow-host, parsed once; with an
// allow-list under workspace-write (and network_access off), `settings` gets the port the
// proxy listens on in each command's namespace. An error names the key and the entry.
Result<net::Policy> NetworkPolicyFrom(const Config& config,
                                      const std::vector<std::string>& allow_hosts,
                                      sandbox::Settings* settings);

sandbox::Settings SandboxSettingsFrom(const Config& config, const std::string& cwd,
                                      const std::string& process_cwd,
                                      const std::vector<std::string>& add_dirs);

// `resume` keeps the provider and model the session was created with, unless the command line
// or a config layer names others. Updates `session` and returns the note for
// stderr saying which were used, e.g.
//   "resume: model gpt-5 and provider openai, kept from the session"
Result<std::string> KeepResumedModel(const std::string& session_provider,
                                     const std::string& session_model, const Config& config,
                                     SessionConfig& session);

// The inputs of a session that are not configuration keys. Paths as the user gave them;
// relative ones resolve against process_cwd.
struct SessionInputs {
  std::string cwd;          // absolute, canonical working directory of the session
  std::string process_cwd;  // absolute
  std::vector<std::string> add_dirs;
  std::vector<std::string> allow_hosts;      // --allow-host, after network.allow
  std::optional<std::string> output_schema;  // --output-schema FILE
  std::vector<std::string> images;           // -i FILE
  // Our environment, for the variables config names (an MCP server's bearer token and
  // env_http_headers); nullptr reads none.
  std::function<std::optional<std::string>(const std::string&)> getenv;
};

// Resolves the model's defaults from the model table (engine/model/model_table.h) into
// `config`, with "model table (SLUG)" as their source so --print-config shows them: reasoning
// effort and summary, verbosity (cleared, with a warning when set, where the family does not
// take them), context window and auto-compact limit (config values win). An unknown model
// adds codex's fallback-metadata warning (not for the scripted provider).
void ApplyModelTable(Config& config);

// Checks the chosen provider (defined, has a base_url or a readable script), reads and
// validates --output-schema (a JSON object) and the images (data: URLs).
Result<SessionConfig> BuildSessionConfig(const Config& config, const SessionInputs& inputs);

}  // namespace ae
