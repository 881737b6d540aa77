// Orchestrator: runs a model's command under the approval policy and the sandbox, and
// reports it as a command_execution item. Under on-failure, a command the sandbox denied is
// retried once unconfined, and the stream records that it was and on what evidence.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/result.h"
#include "engine/events/emitter.h"
#include "engine/exec/turn_context.h"
#include "sandbox/denial.h"
#include "sandbox/prepared.h"
#include "sandbox/spawn.h"

namespace ae {

struct CommandRequest {
  std::vector<std::string> argv;  // e.g. {"/bin/bash", "-lc", "echo hi"}
  std::string workdir;            // absolute
  int64_t timeout_ms = 10000;
  std::string display;  // shown in the item: /bin/bash -lc 'echo hi'
  // sandbox_permissions: "require_escalated". Neither approval policy agentexec runs under
  // (never, on-failure) grants it up front, so such a request runs nothing (codex's answer).
  bool require_escalated = false;
};

// codex's refusal of a require_escalated request, e.g. "approval policy is Never; reject
// command — you cannot ask for escalated permissions if the approval policy is Never".
std::string EscalationRefusal(ApprovalPolicy policy);

struct CommandOutcome {
  sandbox::RunResult run;
  // The sandbox is the likely cause of the final attempt's failure (sandbox/denial.h): the
  // note to the model. Only a verified denial escalates under on-failure.
  bool sandbox_denied = false;
  std::optional<sandbox::Denial> denial;
  bool escalated = false;         // retried outside the sandbox (on-failure)
  std::string item_id;            // the command_execution item of the final attempt
  std::string aggregated_output;  // as shown in that item: valid UTF-8, bounded
  // The process was left running in the background (unified exec): `run` is empty and the
  // runner that kept it completes its item.
  bool running = false;
  // For the model, after the output: one line for each connection the egress proxy refused
  // (net/policy.h DenialHint), naming the host, the rule and how the user allows it.
  std::vector<std::string> network_notes;
};

// Once a command's tree has ended, given what its watch saw: its attempts past the egress
// proxy become network_request items, and the lines for the model (its refusals, the proxy's
// and those past it) are returned. Only the first call records; every call returns the lines.
// A runner that keeps a process in the background calls it when the process ends, so what the
// command tried is on the record and reaches the model however the command finishes.
using NetworkFinish = std::function<std::vector<std::string>(const sandbox::WriteEvidence&)>;

// How one attempt runs once its spawn spec is settled: the finished run, or nullopt when the
// process keeps running in the background. An Error means it did not start.
using AttemptRunner = std::function<Result<std::optional<sandbox::RunResult>>(
    const sandbox::SpawnSpec& spec, const std::string& item_id, const NetworkFinish& finish)>;

// How an attempt runs to completion: sandbox::RunProcess, or a fake where a test must decide
// what a command "did" (the orchestrator's decisions are then tested without processes).
using ProcessRunner = std::function<Result<sandbox::RunResult>(
    const sandbox::SpawnSpec& spec, const sandbox::RunLimits& limits, CancelToken& cancel)>;

class Orchestrator {
 public:
  // `prepared` is null under danger-full-access. Any other mode without a prepared sandbox
  // refuses to run commands (fails closed). Both must outlive the orchestrator. An empty
  // `run_process` is sandbox::RunProcess.
  Orchestrator(const TurnContext& turn, const sandbox::PreparedSandbox* prepared,
               ProcessRunner run_process = {});

  // Emits the command_execution item(s) and returns the final attempt. An Error means no
  // command ran at all (sandbox unavailable, spawn failure); its message is fit for the model.
  // Thread-safe: parallel tool calls share one orchestrator.
  // `runner` replaces the run-to-completion (RunProcess) of each attempt, e.g. with a
  // background session; approval, sandbox, environment and the retry stay the same.
  Result<CommandOutcome> RunCommand(const CommandRequest& request, Emitter& emitter,
                                    CancelToken& cancel, const AttemptRunner& runner = {});

  const TurnContext& turn() const { return turn_; }

 private:
  Result<CommandOutcome> Attempt(const CommandRequest& request,
                                 const sandbox::PreparedSandbox* sandbox, Emitter& emitter,
                                 CancelToken& cancel, const AttemptRunner& runner);

  CommandOutcome Finish(sandbox::RunResult run, const sandbox::PreparedSandbox* sandbox,
                        const std::string& workdir, CommandOutcome outcome) const;

  const TurnContext& turn_;
  const sandbox::PreparedSandbox* prepared_;
  std::vector<std::string> env_;  // computed once from the policy and our environment
  ProcessRunner run_process_;
};

}  // namespace ae
