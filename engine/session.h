// Session: one run of agentexec — configuration snapshot, history, and the turn loop that
// takes the prompt to a final answer, reported as events.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "engine/events/emitter.h"
#include "engine/events/error_code.h"
#include "engine/events/event_sink.h"
#include "engine/exec/orchestrator.h"
#include "engine/exec/turn_context.h"
#include "engine/mcp/manager.h"
#include "engine/mcp/mcp_config.h"
#include "engine/model/client.h"
#include "engine/rollout.h"
#include "engine/turn.h"
#include "net/credentials.h"
#include "net/policy.h"
#include "sandbox/policy.h"
#include "sandbox/preflight.h"
#include "sandbox/prepared.h"

namespace ae {

// Everything the engine needs, resolved by runner/ from flags, config and environment.
struct SessionConfig {
  std::string cwd;  // absolute
  ProviderInfo provider;
  ModelOptions model;
  sandbox::Settings sandbox;
  // The egress allow-list; proxied when sandbox.proxy_port is set (workspace-write).
  net::Policy network;
  // [network.credentials.*]: brokered by the proxy (net/credentials.h); their hosts are in
  // `network`'s allow list too.
  std::vector<net::CredentialSpec> credentials;
  ApprovalPolicy approval = ApprovalPolicy::kNever;
  ShellEnvPolicy shell_env;
  int64_t command_timeout_ms = 10000;
  std::optional<std::string> output_schema_json;  // already validated as a JSON object
  int max_turns = 0;                              // model requests in this run; 0 = no limit
  int64_t max_tokens = 0;                         // thread input+output tokens; 0 = no limit
  size_t project_doc_max_bytes = 32 * 1024;       // AGENTS.md budget
  std::string developer_instructions;             // extra text from config, appended to ours
  std::vector<std::string> images;                // -i: data: URLs sent with the prompt
  std::vector<std::string> warnings;              // emitted as error items before turn.started
  std::string home;                               // $AGENTEXEC_HOME (sessions/ lives here)
  // $CODEX_HOME when set: its AGENTS.md is the global instructions when ours has none.
  std::string codex_home;
  bool ephemeral = false;               // write no session file
  bool progress = false;                // --progress: item.updated for running commands
  std::optional<LoadedRollout> resume;  // continue this thread (resume ID / --last)
  // With `resume`: start a new thread from its history instead (exec fork), with a new id and
  // session file (session_meta's forked_from_id names the source). An empty prompt then runs
  // no turn: thread.started, and the new session file, only.
  bool fork = false;
  std::vector<McpServerSpec> mcp_servers;  // stdio MCP servers whose tools are offered
  FinalAnswerCheck final_answer_check;     // empty: any final answer completes the turn
};

struct SessionResult {
  ErrorCode code = ErrorCode::kNone;  // why it failed (kNone: completed); exit_code.h maps it
  TurnStats stats;                    // duration, requests, last usage
  std::string thread_id;
  std::string final_message;  // last agent_message text; empty if none
  std::string error;          // why it failed, when it did
  std::string session_error;  // why the session file was not (fully) saved; empty if it was
  Usage usage;
  SessionOutcome outcome() const { return OutcomeOf(code); }
};

class ToolRouter;

// What a session reaches outside itself, injectable (as TurnDeps is for the turn) so a whole
// session runs in a test with fakes: no key, kernel or network needed. The defaults are the
// real ones.
struct SessionDeps {
  // The model client for the provider (engine/model/client.h).
  std::function<Result<std::unique_ptr<ModelClient>>(const ProviderInfo&, const ModelOptions&)>
      make_client;
  // The kernel check of a confining policy, and the sandbox prepared from it as that check
  // found the kernel (sandbox/preflight.h, sandbox/prepared.h): the namespaces are probed once.
  std::function<Result<sandbox::PreflightReport>(const sandbox::Policy&)> preflight;
  std::function<Result<sandbox::PreparedPtr>(const sandbox::Policy&,
                                             const sandbox::PreflightReport&)>
      prepare;
  // The tools offered to the model (MCP servers' tools are added to them).
  std::function<std::unique_ptr<ToolRouter>()> make_router;
  // Starts the configured MCP servers and registers their tools in the router
  // (engine/mcp/manager.h); the servers stop when the returned object goes away.
  std::function<McpServers(const std::vector<McpServerSpec>&, ToolRouter&, Emitter&, CancelToken&)>
      start_mcp;
  // How the orchestrator runs a command to completion (engine/exec/orchestrator.h); empty:
  // sandbox::RunProcess.
  ProcessRunner run_process;
  // A new thread's id, and the wall clock (the session file's created_at, the date and time
  // zone the model is told).
  std::function<std::string()> new_thread_id;
  std::function<std::time_t()> now;

  static SessionDeps Real();
};

// Runs one turn. Never prints: everything goes to `sinks` as events.
SessionResult RunSession(const SessionConfig& config, const std::string& prompt,
                         const std::vector<EventSink*>& sinks, CancelToken& cancel,
                         const SessionDeps& deps = SessionDeps::Real());

}  // namespace ae
