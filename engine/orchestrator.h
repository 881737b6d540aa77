// Orchestrator: runs a model's command under the approval policy and the sandbox, and
// reports it as a command_execution item. Under on-failure, a command the sandbox denied is
// retried once unconfined, and the stream records that it was and on what evidence.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/result.h"
#include "engine/emitter.h"
#include "engine/turn_context.h"
#include "sandbox/denial.h"
#include "sandbox/prepared.h"
#include "sandbox/spawn.h"

namespace ae {

struct CommandRequest {
  std::vector<std::string> argv;  // e.g. {"/bin/bash", "-lc", "echo hi"}
  std::string workdir;            // absolute
  int64_t timeout_ms = 10000;
  std::string display;  // shown in the item: /bin/bash -lc 'echo hi'
};

struct CommandOutcome {
  sandbox::RunResult run;
  // The sandbox is the likely cause of the final attempt's failure (sandbox/denial.h): the
  // note to the model. Only a verified denial escalates under on-failure.
  bool sandbox_denied = false;
  std::optional<sandbox::Denial> denial;
  bool escalated = false;         // retried outside the sandbox (on-failure)
  std::string item_id;            // the command_execution item of the final attempt
  std::string aggregated_output;  // as shown in that item: valid UTF-8, bounded
};

class Orchestrator {
 public:
  // `prepared` is null under danger-full-access. Any other mode without a prepared sandbox
  // refuses to run commands (fails closed). Both must outlive the orchestrator.
  Orchestrator(const TurnContext& turn, const sandbox::PreparedSandbox* prepared);

  // Emits the command_execution item(s) and returns the final attempt. An Error means no
  // command ran at all (sandbox unavailable, spawn failure); its message is fit for the model.
  // Thread-safe: parallel tool calls share one orchestrator.
  Result<CommandOutcome> RunCommand(const CommandRequest& request, Emitter& emitter,
                                    CancelToken& cancel);

  const TurnContext& turn() const { return turn_; }

 private:
  Result<CommandOutcome> Attempt(const CommandRequest& request,
                                 const sandbox::PreparedSandbox* sandbox, Emitter& emitter,
                                 CancelToken& cancel);

  const TurnContext& turn_;
  const sandbox::PreparedSandbox* prepared_;
  std::vector<std::string> env_;  // computed once from the policy and our environment
};

}  // namespace ae
