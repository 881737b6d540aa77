#include "engine/session.h"

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>

#include "base/secret_env.h"
#include "engine/compaction.h"
#include "engine/events/command_progress.h"
#include "engine/events/emitter.h"
#include "engine/events/result_record.h"
#include "engine/exec/orchestrator.h"
#include "engine/history.h"
#include "engine/instructions.h"
#include "engine/mcp/manager.h"
#include "engine/tools/router.h"
#include "engine/turn.h"
#include "engine/uuid.h"
#include "sandbox/preflight.h"
#include "sandbox/prepared.h"

namespace ae {
namespace {

std::string Today(std::time_t now, std::string* timezone) {
  std::tm local{};
  ::localtime_r(&now, &local);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", &local);
  char zone[16];
  std::strftime(zone, sizeof zone, "%Z", &local);
  *timezone = zone;
  return date;
}

// How the header describes the sandbox, e.g. "workspace-write [workdir, /tmp] (landlock…)".
std::string DescribeSandbox(const sandbox::Policy& policy, const std::string& cwd,
                            const std::string& enforcement) {
  std::string text = sandbox::ModeName(policy.mode);
  if (policy.mode == sandbox::Mode::kWorkspaceWrite) {
    std::string roots;
    for (const std::string& root : policy.writable_roots) {
      if (!roots.empty()) roots += ", ";
      roots += root == cwd ? "workdir" : root;
    }
    text += " [" + roots + "]";
  }
  if (!policy.unrestricted()) {
    text += policy.network_access ? ", network on" : ", network off";
  }
  if (!enforcement.empty()) text += " (" + enforcement + ")";
  return text;
}

std::string Rfc3339(std::time_t now) {
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

}  // namespace

SessionDeps SessionDeps::Real() {
  SessionDeps deps;
  deps.make_client = MakeModelClient;
  deps.preflight = [](const sandbox::Policy& policy) { return sandbox::Preflight(policy); };
  deps.prepare = [](const sandbox::Policy& policy, const sandbox::PreflightReport& report) {
    return sandbox::Prepare(policy, report);
  };
  deps.make_router = MakeDefaultRouter;
  deps.new_thread_id = NewUuidV7;
  deps.now = [] { return std::time(nullptr); };
  return deps;
}

SessionResult RunSession(const SessionConfig& config, const std::string& prompt,
                         const std::vector<EventSink*>& sinks, CancelToken& cancel,
                         const SessionDeps& outside) {
  SessionResult result;
  ResultRecorder record;
  result.thread_id = config.resume ? config.resume->meta.thread_id : outside.new_thread_id();
  Emitter emitter(sinks);

  // A sandbox that cannot be enforced ends the run before any work, framed like every other
  // failure: thread.started, turn.started, error, turn.failed (README "Exit codes"). A client
  // that cannot be made (no key) is found before the header instead: only the `error`.
  auto fail_before_turn = [&](ErrorCode code, std::string message, bool framed = true) {
    if (framed) {
      SessionInfo info;
      info.cwd = config.cwd;
      info.model = config.model.model;
      info.provider = config.provider.id;
      info.approval = ApprovalPolicyName(config.approval);
      info.sandbox = sandbox::ModeName(config.sandbox.mode);
      info.reasoning_effort = config.model.reasoning_effort;
      emitter.Emit(ThreadStarted{result.thread_id, info});
      emitter.Emit(TurnStarted{});
    }
    emitter.Emit(StreamError{message});
    if (framed) emitter.Emit(TurnFailed{message, code, Usage{}, record.Stats()});
    result.code = code;
    result.stats = record.Stats();
    result.error = std::move(message);
    return result;
  };

  // The sandbox is settled before anything else: a mode this kernel cannot enforce stops
  // the run here (exit 3) instead of running commands unconfined.
  Result<sandbox::Policy> policy = sandbox::BuildPolicyWithoutNested(config.sandbox, config.cwd);
  if (!policy.ok()) {
    return fail_before_turn(ErrorCode::kSandboxUnavailable, policy.message());
  }
  // The nested repositories are searched while the run starts and the model answers; the
  // turn waits for them before its first tool call (complete_sandbox below).
  sandbox::NestedScan nested(*policy, cancel);
  sandbox::PreparedPtr prepared;
  std::vector<std::string> warnings = config.warnings;
  std::string enforcement;
  if (!policy->unrestricted()) {
    Result<sandbox::PreflightReport> report = outside.preflight(*policy);
    if (!report.ok()) {
      return fail_before_turn(ErrorCode::kSandboxUnavailable, report.message());
    }
    enforcement = report->description;
    for (const std::string& w : report->warnings) warnings.push_back(w);
    Result<sandbox::PreparedPtr> made = outside.prepare(*policy, *report);
    if (!made.ok()) {
      return fail_before_turn(ErrorCode::kSandboxUnavailable, made.message());
    }
    prepared = std::move(made.value());
  }

  // A prompt that cannot fit the model's window on its own can only fail or, compacted, lose
  // most of the task; it ends the run before any request (context_length, exit 1: the failure
  // is the model's window, not the command line, and the consumer gets the framed failure).
  if (const int64_t window = config.model.context_window; window > 0) {
    const int64_t tokens = EstimateTokens(prompt);
    if (tokens > window) {
      return fail_before_turn(
          ErrorCode::kContextLength,
          fmt::format("the prompt does not fit the model's context window: it is about {} tokens "
                      "({} bytes at 4 bytes a token) and the window of `{}` holds {} "
                      "(model_context_window); shorten it, or put the material in files the "
                      "agent can read",
                      tokens, prompt.size(), config.model.model, window));
    }
  }

  // A missing key is found before the header: nothing is shown as started that cannot run.
  // Every secret is read here, once: the key by the client, the env_http_headers values into
  // plain headers. Then the variables are wiped from the process (base/secret_env.h), so no
  // command, not even one under danger-full-access, finds them in /proc/<agentexec>/environ.
  ProviderInfo provider = config.provider;
  std::vector<std::string> secret_names = {"AGENTEXEC_API_KEY", "CODEX_API_KEY", "OPENAI_API_KEY"};
  if (!provider.env_key.empty()) secret_names.push_back(provider.env_key);
  for (const auto& [header, variable] : provider.env_http_headers) {
    const char* value = std::getenv(variable.c_str());
    // A line break in a header value would split the request; the variable is not ours to fix.
    if (value != nullptr &&
        std::string_view(value).find_first_of("\r\n") != std::string_view::npos) {
      warnings.push_back(fmt::format(
          "env_http_headers: the value of `{}` for header `{}` holds a line break; the header is "
          "not sent",
          variable, header));
    } else if (value != nullptr && *value != '\0') {
      provider.http_headers[header] = value;
    }
    secret_names.push_back(variable);
  }
  provider.env_http_headers.clear();
  // The MCP servers' token and header variables were read when the run was configured
  // (runner/session_config.cc); they are credential variables like the provider's.
  for (const std::string& variable : config.shell_env.credential_vars) {
    secret_names.push_back(variable);
  }
  Result<std::unique_ptr<ModelClient>> client = outside.make_client(provider, config.model);
  // Non-dumpable only without a sandbox: a sandboxed command cannot ptrace (seccomp), and the
  // sandbox's child writes its own /proc/self/uid_map before execve, which a non-dumpable
  // (root-owned) /proc/self would refuse to an unprivileged user.
  ForgetSecretVariables(secret_names, policy->unrestricted());
  // Credentials agentexec only passes on (a CI token a user's shell_environment_policy lets
  // commands have) leave the startup block too: /proc/<agentexec>/environ shows none of them.
  MoveVariablesOffStartupBlock(CredentialLookingVariables());
  if (!client.ok()) {
    return fail_before_turn(ClassifyModelError(client.error()), client.message(), /*framed=*/false);
  }

  TurnContext turn;
  turn.cwd = config.cwd;
  turn.sandbox = *policy;
  turn.approval = config.approval;
  turn.shell_env = config.shell_env;
  turn.command_timeout_ms = config.command_timeout_ms;
  turn.progress_interval_ms = config.progress ? kProgressIntervalMs : 0;

  SessionInfo info;
  info.cwd = config.cwd;
  info.model = config.model.model;
  info.provider = config.provider.id;
  info.approval = ApprovalPolicyName(config.approval);
  info.sandbox = DescribeSandbox(*policy, config.cwd, enforcement);
  info.reasoning_effort = config.model.reasoning_effort;
  emitter.Emit(ThreadStarted{result.thread_id, info});
  for (const std::string& w : warnings) emitter.CompleteNew(ErrorItem{w});
  emitter.Emit(TurnStarted{});

  // A resumed thread keeps its history and adds the new prompt; a new one starts with our
  // instructions, the project's AGENTS.md and the environment.
  std::vector<std::string> initial;
  if (!config.resume) {
    std::string timezone;
    std::string date = Today(outside.now(), &timezone);
    initial.push_back(
        MessageInputItem("developer", DeveloperInstructions(turn, config.developer_instructions)));
    std::vector<std::string> refused;
    std::string docs = ProjectDocs(config.cwd, config.project_doc_max_bytes, &refused);
    for (const std::string& w : refused) emitter.CompleteNew(ErrorItem{w});
    if (!docs.empty()) initial.push_back(MessageInputItem("user", docs));
    initial.push_back(MessageInputItem("user", EnvironmentContext(turn, date, timezone)));
  }
  initial.push_back(UserInputItem(prompt, config.images));

  std::unique_ptr<RolloutWriter> rollout;
  if (!config.ephemeral) {
    Result<std::unique_ptr<RolloutWriter>> opened =
        config.resume
            ? RolloutWriter::Append(config.resume->path)
            : RolloutWriter::Create(
                  config.home, SessionMeta{result.thread_id, config.cwd, Rfc3339(outside.now()),
                                           config.model.model, config.provider.id, info.sandbox});
    if (opened.ok()) {
      rollout = std::move(opened.value());
      // A write that fails later (a full disk) is reported once, as the open failure is.
      rollout->OnError([&emitter](const std::string& why) { emitter.CompleteNew(ErrorItem{why}); });
    } else {
      // Losing the session file must not lose the run; say so and go on.
      emitter.CompleteNew(ErrorItem{opened.message() + "; this run cannot be resumed"});
      result.session_error = opened.message();
    }
  }
  auto session_saved = [&] {
    if (rollout && rollout->failed()) result.session_error = rollout->error();
  };
  std::vector<std::string> history =
      config.resume ? config.resume->items : std::vector<std::string>{};
  for (std::string& item : initial) {
    if (rollout) rollout->AddItem(item);
    history.push_back(std::move(item));
  }

  std::unique_ptr<ToolRouter> router = outside.make_router();
  // Stopped when RunSession returns; a server that fails to start is an error item, no more.
  McpServers mcp = McpServers::Start(config.mcp_servers, emitter, cancel);
  mcp.RegisterTools(*router);
  if (std::optional<std::string> failure = mcp.RequiredFailure()) {
    result.stats = record.Stats();
    if (config.resume) result.usage = config.resume->usage;
    emitter.Emit(StreamError{*failure});
    emitter.Emit(TurnFailed{*failure, ErrorCode::kMcpError, result.usage, result.stats});
    result.code = ErrorCode::kMcpError;
    result.error = *failure;
    session_saved();
    return result;
  }
  Orchestrator orchestrator(turn, prepared.get());
  bool sandbox_complete = false;
  auto complete_sandbox = [&]() -> Status {
    if (sandbox_complete) return {};
    if (Status found = nested.Finish(&turn.sandbox); !found.ok()) return found;
    if (prepared) sandbox::UpdateCarveouts(*prepared, turn.sandbox);
    sandbox_complete = true;
    return {};
  };
  TurnDeps deps{.turn = turn,
                .client = **client,
                .router = *router,
                .orchestrator = orchestrator,
                .emitter = emitter,
                .cancel = cancel,
                .output_schema_json = config.output_schema_json,
                .max_turns = config.max_turns,
                .max_tokens = config.max_tokens,
                .context_window = config.model.context_window,
                .auto_compact_token_limit = config.model.auto_compact_token_limit,
                .rollout = rollout.get(),
                .usage_before = config.resume ? config.resume->usage : Usage{},
                .resumed_last_usage = config.resume ? config.resume->last_usage : Usage{},
                .resumed_counted_items = config.resume ? config.resume->last_usage_items : 0,
                .prompt_cache_key = result.thread_id,
                .final_answer_check = config.final_answer_check,
                .record = &record,
                .before_tools = complete_sandbox};
  TurnResult turn_result = RunTurn(deps, history);

  result.code = turn_result.code;
  result.stats = turn_result.stats;
  result.error = turn_result.error;
  result.final_message = turn_result.final_message;
  result.usage = turn_result.usage;
  session_saved();
  return result;
}

}  // namespace ae
