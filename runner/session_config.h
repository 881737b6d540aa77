// From command line + environment + files to a run: LoadRun is what main.cc calls. Every
// error here is a usage or configuration error (exit 2), its message ready for
// stderr as is.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/session.h"
#include "runner/cli.h"
#include "runner/config.h"

namespace ae {

// The process's surroundings, injectable so tests need not touch the real environment.
struct Environment {
  std::function<std::optional<std::string>(const std::string&)> getenv;
  std::string cwd;  // the process's working directory, absolute

  static Environment FromProcess();  // ::getenv and getcwd()
};

struct ResumeTarget {
  bool last = false;       // resume --last
  std::string session_id;  // resume ID (empty with --last)
};

struct LoadedRun {
  Config config;                      // effective settings with their sources (for --print-config)
  SessionConfig session;              // ready for RunSession (not filled when print_config is set)
  std::string home;                   // absolute $AGENTEXEC_HOME (default ~/.agentexec)
  std::vector<std::string> warnings;  // also in session.warnings; print before the turn
  bool print_config = false;          // print FormatConfig(config) to stdout and exit 0
  bool json = false;
  std::string color = "auto";                      // always | never | auto
  std::optional<std::string> output_last_message;  // -o, absolute
  int64_t timeout_ms = 0;                          // --timeout / `timeout`; 0 = none
  std::optional<ResumeTarget> resume;
  bool ephemeral = false;
};

// Resolves home and -C, loads the configuration layers, checks the git repository (not for
// --print-config) and builds the session. Does not read the prompt: see ReadPrompt.
Result<LoadedRun> LoadRun(const CliArgs& args, const Environment& env);

// What every command reads before it does anything: $AGENTEXEC_HOME, the working directory
// (-C) and the configuration layers (user, profile, project at the git root, environment, -c,
// flags). Shared by LoadRun and `agentexec sandbox`, so both read the same keys the same way.
// Errors are ready for stderr ("error: ...").
struct LoadedLayers {
  std::string home;  // absolute $AGENTEXEC_HOME
  std::string cwd;   // absolute, canonical working directory
  Config config;
};
Result<LoadedLayers> LoadLayers(const CliArgs& args, const Environment& env);

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
