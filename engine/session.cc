#include "engine/session.h"

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>

#include "base/secret_env.h"
#include "engine/compaction.h"
#include "engine/events/command_progress.h"
#include "engine/events/emitter.h"
#include "engine/events/result_record.h"
#include "engine/exec/credential_broker.h"
#include "engine/exec/orchestrator.h"
#include "engine/history.h"
#include "engine/instructions.h"
#include "engine/mcp/manager.h"
#include "engine/tools/router.h"
#include "engine/turn.h"
#include "engine/uuid.h"
#include "sandbox/placeholders.h"
#include "sandbox/preflight.h"
#include "sandbox/prepared.h"
#include "sandbox/private_tmp.h"

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
    text += policy.network_access    ? ", network on"
            : policy.proxy_port != 0 ? ", network by allow-list"
                                     : ", network off";
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

// What every step of a session shares: its inputs, the result so far, the result record
// and the emitter.
struct SessionRun {
  const SessionConfig& config;
  const std::string& prompt;
  CancelToken& cancel;
  const SessionDeps& outside;
  SessionResult result;
  ResultRecorder record;
  Emitter emitter;
};

// A sandbox that cannot be enforced ends the run before any work, framed like every other
// failure: thread.started, turn.started, error, turn.failed (README "Exit codes"). A client
// that cannot be made (no key) is found before the header instead: only the `error`.
// The header's facts; `sandbox` is the mode's name until the sandbox is settled.
SessionInfo HeaderInfo(const SessionConfig& config) {
  SessionInfo info;
  info.cwd = config.cwd;
  info.model = config.model.model;
  info.provider = config.provider.id;
  info.approval = ApprovalPolicyName(config.approval);
  info.sandbox = sandbox::ModeName(config.sandbox.mode);
  info.reasoning_effort = config.model.reasoning_effort;
  return info;
}

SessionResult FailBeforeTurn(SessionRun& run, ErrorCode code, std::string message,
                             bool framed = true) {
  const SessionConfig& config = run.config;
  if (framed) {
    SessionInfo info = HeaderInfo(config);
    info.prompt_refused = code == ErrorCode::kContextLength;  // only CheckPromptFits says so
    run.emitter.Emit(ThreadStarted{run.result.thread_id, info});
    run.emitter.Emit(TurnStarted{});
  }
  run.emitter.Emit(StreamError{message});
  if (framed) run.emitter.Emit(TurnFailed{message, code, Usage{}, run.record.Stats()});
  run.result.code = code;
  run.result.stats = run.record.Stats();
  run.result.error = std::move(message);
  return run.result;
}

// The settled sandbox: the policy, the nested-repository search still under way, the prepared
// sandbox (null when unrestricted), the warnings so far and how the kernel enforces it.
struct SettledSandbox {
  // First, so they go last: the run's own /tmp and the placeholders are removed once every
  // command is gone.
  sandbox::PrivateTmp tmp;
  sandbox::Placeholders placeholders;
  std::optional<sandbox::Policy> policy;
  std::unique_ptr<sandbox::NestedScan> nested;
  sandbox::PreparedPtr prepared;
  // With a network allow-list: the proxy the commands' leases attach to (net/proxy.h).
  std::unique_ptr<net::Proxy> proxy;
  // With brokered credentials: the broker, and the run's directory of its trust bundle when
  // the run has no /tmp of its own (otherwise the bundle is in `tmp`).
  BrokerSetup broker;
  sandbox::PrivateTmp broker_dir;
  std::vector<std::string> warnings;
  std::string enforcement;
};

// The sandbox is settled before anything else: a mode this kernel cannot enforce stops
// the run here (exit 3) instead of running commands unconfined.
std::optional<SessionResult> SettleSandbox(SessionRun& run, SettledSandbox& settled) {
  const SessionConfig& config = run.config;
  sandbox::Settings settings = config.sandbox;
  if (sandbox::WantsPrivateTmp(settings)) {
    Result<sandbox::PrivateTmp> tmp = sandbox::PrivateTmp::Create();
    if (!tmp.ok()) return FailBeforeTurn(run, ErrorCode::kSandboxUnavailable, tmp.message());
    settled.tmp = std::move(*tmp);
    settings.private_tmp = settled.tmp.path();
  }
  Result<sandbox::Policy> policy = sandbox::BuildPolicyWithoutNested(settings, config.cwd);
  if (!policy.ok()) {
    return FailBeforeTurn(run, ErrorCode::kSandboxUnavailable, policy.message());
  }
  settled.policy = *policy;
  // The nested repositories are searched once the model announces a tool call, while the
  // call streams; the turn waits for them before running it (complete_sandbox in RunTheTurn).
  settled.nested = std::make_unique<sandbox::NestedScan>(*policy, run.cancel);
  settled.warnings = config.warnings;
  if (!policy->unrestricted()) {
    Result<sandbox::PreflightReport> report = run.outside.preflight(*policy);
    if (!report.ok()) {
      return FailBeforeTurn(run, ErrorCode::kSandboxUnavailable, report.message());
    }
    settled.enforcement = report->description;
    for (const std::string& w : report->warnings) settled.warnings.push_back(w);
    Result<sandbox::PreparedPtr> made = run.outside.prepare(*policy, *report);
    if (!made.ok()) {
      return FailBeforeTurn(run, ErrorCode::kSandboxUnavailable, made.message());
    }
    settled.prepared = std::move(made.value());
  }
  if (policy->proxy_port != 0) {
    std::string local_error;
    std::unique_ptr<net::LocalAddresses> local = net::SystemLocalAddresses(&local_error);
    if (!local_error.empty()) {
      // Without this host's own addresses, a name resolving to one of them would be dialled.
      return FailBeforeTurn(
          run, ErrorCode::kSandboxUnavailable,
          "network allow-list: cannot list this host's addresses: " + local_error);
    }
    if (!config.credentials.empty()) {
      std::string host_dir = settled.tmp.path();
      std::string command_dir =
          settled.prepared ? sandbox::CommandTmpdir(*settled.prepared) : host_dir;
      if (host_dir.empty()) {
        Result<sandbox::PrivateTmp> dir = sandbox::PrivateTmp::Create();
        if (!dir.ok()) return FailBeforeTurn(run, ErrorCode::kSandboxUnavailable, dir.message());
        settled.broker_dir = std::move(*dir);
        host_dir = command_dir = settled.broker_dir.path();
      }
      Result<BrokerSetup> broker = SetUpBroker(config.credentials, host_dir, command_dir);
      if (!broker.ok()) return FailBeforeTurn(run, ErrorCode::kConfigError, broker.message());
      settled.broker = std::move(*broker);
    }
    settled.proxy = std::make_unique<net::Proxy>(config.network, net::SystemResolver(),
                                                 std::move(local), settled.broker.broker);
  } else if (!config.credentials.empty()) {
    // Without the proxy nothing could put the real value in: commands would fail with a
    // dummy, or (network_access = true, danger-full-access) be given the secret itself.
    return FailBeforeTurn(
        run, ErrorCode::kConfigError,
        "network.credentials needs the network allow-list under workspace-write (a non-empty "
        "network.allow or credential hosts, and sandbox_workspace_write.network_access unset)");
  }
  return std::nullopt;
}

// A prompt that cannot fit the model's window on its own can only fail or, compacted, lose
// most of the task; it ends the run before any request (context_length, exit 1: the failure
// is the model's window, not the command line, and the consumer gets the framed failure).
std::optional<SessionResult> CheckPromptFits(SessionRun& run) {
  const SessionConfig& config = run.config;
  const std::string& prompt = run.prompt;
  if (const int64_t window = config.model.context_window; window > 0) {
    const int64_t tokens = EstimateTokens(prompt);
    if (tokens > window) {
      return FailBeforeTurn(
          run, ErrorCode::kContextLength,
          fmt::format("the prompt does not fit the model's context window: it is about {} tokens "
                      "({} bytes at 4 bytes a token) and the window of `{}` holds {} "
                      "(model_context_window); shorten it, or put the material in files the "
                      "agent can read",
                      tokens, prompt.size(), config.model.model, window));
    }
  }
  // Under the window but at the auto-compact limit: the first request would compact the prompt
  // itself, and the model would work from a fraction of the task. Refused the same way.
  if (const int64_t limit = config.model.auto_compact_token_limit; limit > 0) {
    const int64_t tokens = EstimateTokens(prompt);
    if (tokens >= limit) {
      return FailBeforeTurn(
          run, ErrorCode::kContextLength,
          fmt::format("the prompt is too large to keep whole: it is about {} tokens ({} bytes at "
                      "4 bytes a token) and the history of `{}` is compacted at {} "
                      "(model_auto_compact_token_limit), which would cut the task itself; "
                      "shorten it, or put the material in files the agent can read",
                      tokens, prompt.size(), config.model.model, limit));
    }
  }
  return std::nullopt;
}

// A missing key is found before the header: nothing is shown as started that cannot run.
// Every secret is read here, once: the key by the client, the env_http_headers values into
// plain headers. Then the variables are wiped from the process (base/secret_env.h), so no
// command, not even one under danger-full-access, finds them in /proc/<agentexec>/environ.
Result<std::unique_ptr<ModelClient>> MakeClientAndForgetSecrets(SessionRun& run,
                                                                SettledSandbox& settled) {
  const SessionConfig& config = run.config;
  ProviderInfo provider = config.provider;
  std::vector<std::string> secret_names = {"AGENTEXEC_API_KEY", "CODEX_API_KEY", "OPENAI_API_KEY"};
  if (!provider.env_key.empty()) secret_names.push_back(provider.env_key);
  for (const auto& [header, variable] : provider.env_http_headers) {
    const char* value = std::getenv(variable.c_str());
    // A line break in a header value would split the request; the variable is not ours to fix.
    if (value != nullptr &&
        std::string_view(value).find_first_of("\r\n") != std::string_view::npos) {
      settled.warnings.push_back(fmt::format(
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
  // (config/session_config.cc); they are credential variables like the provider's.
  for (const std::string& variable : config.shell_env.credential_vars) {
    secret_names.push_back(variable);
  }
  Result<std::unique_ptr<ModelClient>> client = run.outside.make_client(provider, config.model);
  // Non-dumpable only without a sandbox: a sandboxed command cannot ptrace (seccomp), and the
  // sandbox's child writes its own /proc/self/uid_map before execve, which a non-dumpable
  // (root-owned) /proc/self would refuse to an unprivileged user.
  ForgetSecretVariables(secret_names, settled.policy->unrestricted());
  // Credentials agentexec only passes on (a CI token a user's shell_environment_policy lets
  // commands have) leave the startup block too: /proc/<agentexec>/environ shows none of them.
  MoveVariablesOffStartupBlock(CredentialLookingVariables());
  return client;
}

// thread.started with the header, the warnings so far as error items, turn.started; returns
// the sandbox as the header describes it.
std::string StartThread(SessionRun& run, const SettledSandbox& settled) {
  const SessionConfig& config = run.config;
  SessionInfo info = HeaderInfo(config);
  info.sandbox = DescribeSandbox(*settled.policy, config.cwd, settled.enforcement);
  run.emitter.Emit(ThreadStarted{run.result.thread_id, info});
  for (const std::string& w : settled.warnings) run.emitter.CompleteNew(ErrorItem{w});
  run.emitter.Emit(TurnStarted{});
  return info.sandbox;
}

// A resumed thread keeps its history and adds the new prompt; a new one starts with our
// instructions, the project's AGENTS.md and the environment.
std::vector<std::string> InitialItems(SessionRun& run, const TurnContext& turn) {
  const SessionConfig& config = run.config;
  std::vector<std::string> initial;
  if (!config.resume) {
    std::string timezone;
    std::string date = Today(run.outside.now(), &timezone);
    initial.push_back(
        MessageInputItem("developer", DeveloperInstructions(turn, config.developer_instructions)));
    std::vector<std::string> refused;
    // The user's own instructions first, as codex sends them (engine/instructions.h).
    const std::string global = GlobalInstructions({config.home, config.codex_home},
                                                  config.project_doc_max_bytes, &refused);
    std::string docs = ProjectDocs(config.cwd, config.project_doc_max_bytes, &refused, global);
    for (const std::string& w : refused) run.emitter.CompleteNew(ErrorItem{w});
    if (!docs.empty()) initial.push_back(MessageInputItem("user", docs));
    initial.push_back(MessageInputItem("user", EnvironmentContext(turn, date, timezone)));
  }
  initial.push_back(UserInputItem(run.prompt, config.images));
  return initial;
}

// The session file, opened for a new thread or appended to for a resumed one; null when
// --ephemeral or when it cannot be opened (said as an error item: the run goes on).
std::unique_ptr<RolloutWriter> OpenRollout(SessionRun& run, const std::string& sandbox_text) {
  const SessionConfig& config = run.config;
  std::unique_ptr<RolloutWriter> rollout;
  if (!config.ephemeral) {
    const bool append = config.resume && !config.fork;
    Result<std::unique_ptr<RolloutWriter>> opened =
        append ? RolloutWriter::Append(config.resume->path)
               : RolloutWriter::Create(
                     config.home,
                     SessionMeta{run.result.thread_id, config.cwd, Rfc3339(run.outside.now()),
                                 config.model.model, config.provider.id, sandbox_text,
                                 config.fork ? config.resume->meta.thread_id : std::string()});
    if (opened.ok()) {
      rollout = std::move(opened.value());
      // A write that fails later (a full disk) is reported once, as the open failure is.
      Emitter& emitter = run.emitter;
      rollout->OnError([&emitter](const std::string& why) { emitter.CompleteNew(ErrorItem{why}); });
      if (config.fork) {
        // The fork's file stands alone: the source's usage so far (first, so no later resume
        // takes it for the size of the history after it), then the history it starts from.
        rollout->AddUsage(config.resume->usage);
        for (const std::string& item : config.resume->items) rollout->AddItem(item);
      }
    } else {
      // Losing the session file must not lose the run; say so and go on.
      run.emitter.CompleteNew(ErrorItem{opened.message() + "; this run cannot be resumed"});
      run.result.session_error = opened.message();
    }
  }
  return rollout;
}

// The turn itself, with the tools, the MCP servers' among them, and the sandbox completed
// before the first tool call; the session's result from the turn's.
void RunTheTurn(SessionRun& run, SettledSandbox& settled, TurnContext& turn, ModelClient& client,
                RolloutWriter* rollout, std::vector<std::string>& history) {
  const SessionConfig& config = run.config;
  std::unique_ptr<ToolRouter> router = run.outside.make_router();
  // Stopped when this returns; a server that fails to start is an error item, no more.
  McpServers mcp = run.outside.start_mcp(config.mcp_servers, *router, run.emitter, run.cancel);
  if (std::optional<std::string> failure = mcp.RequiredFailure()) {
    run.result.stats = run.record.Stats();
    if (config.resume) run.result.usage = config.resume->usage;
    run.emitter.Emit(StreamError{*failure});
    run.emitter.Emit(
        TurnFailed{*failure, ErrorCode::kMcpError, run.result.usage, run.result.stats});
    run.result.code = ErrorCode::kMcpError;
    run.result.error = *failure;
    return;
  }
  Orchestrator orchestrator(turn, settled.prepared.get(), run.outside.run_process);
  bool sandbox_complete = false;
  auto complete_sandbox = [&]() -> Status {
    if (sandbox_complete) return {};
    if (Status found = settled.nested->Finish(&turn.sandbox); !found.ok()) return found;
    // The protected paths that do not exist yet, made before the first command so that none
    // can be created by one (sandbox/placeholders.h).
    std::vector<std::string> warnings;
    settled.placeholders.Make(&turn.sandbox, &warnings);
    for (const std::string& w : warnings) run.emitter.CompleteNew(ErrorItem{w});
    if (settled.prepared) {
      if (Status held = sandbox::UpdateCarveouts(*settled.prepared, turn.sandbox); !held.ok()) {
        return held;
      }
    }
    sandbox_complete = true;
    return {};
  };
  TurnDeps deps{.turn = turn,
                .client = client,
                .router = *router,
                .orchestrator = orchestrator,
                .emitter = run.emitter,
                .cancel = run.cancel,
                .output_schema_json = config.output_schema_json,
                .max_turns = config.max_turns,
                .max_tokens = config.max_tokens,
                .context_window = config.model.context_window,
                .auto_compact_token_limit = config.model.auto_compact_token_limit,
                .rollout = rollout,
                .usage_before = config.resume ? config.resume->usage : Usage{},
                .resumed_last_usage = config.resume ? config.resume->last_usage : Usage{},
                .resumed_counted_items = config.resume ? config.resume->last_usage_items : 0,
                .prompt_cache_key = run.result.thread_id,
                .new_input_items = 1,  // the prompt (InitialItems' last)
                .final_answer_check = config.final_answer_check,
                .record = &run.record,
                .before_tools = complete_sandbox,
                .tool_call_ahead = [&] { settled.nested->Start(); }};
  TurnResult turn_result = RunTurn(deps, history);

  run.result.code = turn_result.code;
  run.result.stats = turn_result.stats;
  run.result.error = turn_result.error;
  run.result.final_message = turn_result.final_message;
  run.result.usage = turn_result.usage;
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
  deps.start_mcp = [](const std::vector<McpServerSpec>& specs, ToolRouter& router, Emitter& emitter,
                      CancelToken& cancel) {
    McpServers servers = McpServers::Start(specs, emitter, cancel);
    servers.RegisterTools(router);
    return servers;
  };
  // run_process stays empty: the orchestrator then runs sandbox::RunProcess.
  deps.new_thread_id = NewUuidV7;
  deps.now = [] { return std::time(nullptr); };
  return deps;
}

SessionResult RunSession(const SessionConfig& config, const std::string& prompt,
                         const std::vector<EventSink*>& sinks, CancelToken& cancel,
                         const SessionDeps& outside) {
  SessionRun run{.config = config,
                 .prompt = prompt,
                 .cancel = cancel,
                 .outside = outside,
                 .result = {},
                 .record = ResultRecorder(),
                 .emitter = Emitter(sinks)};
  run.result.thread_id =
      config.resume && !config.fork ? config.resume->meta.thread_id : outside.new_thread_id();
  if (config.fork && prompt.empty()) {
    // `exec fork ID` without a prompt, as codex: the new thread is recorded, no turn runs.
    run.emitter.Emit(ThreadStarted{run.result.thread_id, HeaderInfo(config)});
    std::unique_ptr<RolloutWriter> rollout =
        OpenRollout(run, sandbox::ModeName(config.sandbox.mode));
    if (rollout && rollout->failed()) run.result.session_error = rollout->error();
    run.result.usage = config.resume->usage;
    return run.result;
  }

  SettledSandbox settled;
  if (std::optional<SessionResult> failed = SettleSandbox(run, settled)) return *failed;
  if (std::optional<SessionResult> failed = CheckPromptFits(run)) return *failed;
  Result<std::unique_ptr<ModelClient>> client = MakeClientAndForgetSecrets(run, settled);
  if (!client.ok()) {
    return FailBeforeTurn(run, ClassifyModelError(client.error()), client.message(),
                          /*framed=*/false);
  }

  TurnContext turn;
  turn.cwd = config.cwd;
  turn.sandbox = *settled.policy;
  turn.approval = config.approval;
  turn.shell_env = config.shell_env;
  turn.command_timeout_ms = config.command_timeout_ms;
  turn.progress_interval_ms = config.progress ? kProgressIntervalMs : 0;
  turn.proxy = settled.proxy.get();
  turn.broker = settled.broker.broker.get();
  turn.broker_env = settled.broker.env;
  if (turn.proxy != nullptr) {
    run.record.EnableNetwork();
    turn.on_connection = [&record = run.record](const std::string& host, int port, bool reached) {
      record.OnConnection(host, port, reached);
    };
  }

  const std::string sandbox_text = StartThread(run, settled);
  std::vector<std::string> initial = InitialItems(run, turn);
  std::unique_ptr<RolloutWriter> rollout = OpenRollout(run, sandbox_text);
  std::vector<std::string> history =
      config.resume ? config.resume->items : std::vector<std::string>{};
  for (std::string& item : initial) {
    if (rollout) rollout->AddItem(item);
    history.push_back(std::move(item));
  }

  RunTheTurn(run, settled, turn, **client, rollout.get(), history);
  if (rollout && rollout->failed()) run.result.session_error = rollout->error();
  return run.result;
}

}  // namespace ae
