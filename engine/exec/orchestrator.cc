#include "engine/exec/orchestrator.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>

#include "engine/events/command_progress.h"
#include "engine/exec/credential_broker.h"
#include "engine/exec/direct_record.h"
#include "engine/exec/env_policy.h"
#include "engine/exec/model_output.h"
#include "sandbox/denial.h"

namespace ae {

namespace {

// What a command's connections leave for the model: the refusals' hints, gathered when the
// proxy's lease ends (on the thread that reaps the command).
struct NetworkNotes {
  std::mutex mu;
  std::vector<std::string> lines;
  std::atomic<bool> finished{false};  // the command's attempts past the proxy are recorded
};

// One connection attempt of the command `call_id`: its network_request item, its count in the
// run's summary, and a refusal's line for the model (each distinct line once).
void RecordConnection(net::ConnectionRecord r, Emitter& emitter, const std::string& call_id,
                      NetworkNotes& notes, const TurnContext& turn) {
  emitter.CompleteNew(NetworkRequestItem{call_id, r.protocol, r.host, r.port, r.method, r.address,
                                         r.allowed, r.rule, r.reason, r.bytes_sent,
                                         r.bytes_received, std::move(r.credentials)});
  if (turn.on_connection && !r.host.empty()) {
    turn.on_connection(r.host, r.port, r.allowed && !r.address.empty() && r.reason.empty());
  }
  if (!r.hint.empty()) {
    std::lock_guard<std::mutex> lock(notes.mu);
    if (std::find(notes.lines.begin(), notes.lines.end(), r.hint) == notes.lines.end()) {
      notes.lines.push_back(std::move(r.hint));
    }
  }
}

// The proxy's lease on one command's network namespace. When the command's tree has ended, each
// connection becomes a network_request item and each refusal a line for the model.
class ProxyAttachment : public sandbox::NetworkAttachment {
 public:
  ProxyAttachment(std::unique_ptr<net::Proxy::Lease> lease, Emitter* emitter, std::string call_id,
                  std::shared_ptr<NetworkNotes> notes, const TurnContext* turn)
      : lease_(std::move(lease)),
        emitter_(emitter),
        call_id_(std::move(call_id)),
        notes_(std::move(notes)),
        turn_(turn) {}
  ~ProxyAttachment() override { End(); }
  ProxyAttachment(const ProxyAttachment&) = delete;
  ProxyAttachment& operator=(const ProxyAttachment&) = delete;
  ProxyAttachment(ProxyAttachment&&) = delete;
  ProxyAttachment& operator=(ProxyAttachment&&) = delete;

  void End() override {
    if (!lease_) return;
    for (net::ConnectionRecord& r : lease_->Finish()) {
      RecordConnection(std::move(r), *emitter_, call_id_, *notes_, *turn_);
    }
    lease_.reset();
  }

 private:
  std::unique_ptr<net::Proxy::Lease> lease_;
  Emitter* emitter_;
  std::string call_id_;
  std::shared_ptr<NetworkNotes> notes_;
  const TurnContext* turn_;
};

std::vector<std::string> CommandEnv(const TurnContext& turn) {
  std::vector<std::string> env =
      BuildCommandEnv(turn.shell_env, ProcessEnvironment(),
                      !turn.sandbox.unrestricted() && !turn.sandbox.network_access);
  if (turn.proxy != nullptr) {
    std::vector<std::string> added = net::ProxyEnvironment(turn.sandbox.proxy_port);
    added.insert(added.end(), turn.broker_env.begin(), turn.broker_env.end());
    for (std::string& kv : added) {
      const size_t eq = kv.find('=');
      std::erase_if(env, [&](const std::string& have) {
        return have.compare(0, eq + 1, kv, 0, eq + 1) == 0;
      });
      env.push_back(std::move(kv));
    }
    std::sort(env.begin(), env.end());
  }
  if (turn.broker != nullptr) ReplaceRealValues(*turn.broker, &env);
  return env;
}

}  // namespace

Orchestrator::Orchestrator(const TurnContext& turn, const sandbox::PreparedSandbox* prepared,
                           ProcessRunner run_process)
    : turn_(turn),
      prepared_(prepared),
      env_(CommandEnv(turn)),
      run_process_(std::move(run_process)) {
  if (!run_process_) {
    run_process_ = [](const sandbox::SpawnSpec& spec, const sandbox::RunLimits& limits,
                      CancelToken& cancel) { return sandbox::RunProcess(spec, limits, cancel); };
  }
}

namespace {

// Sets NAME=value in `env` ("NAME=value" entries sorted by name), in place of any value it
// had, keeping the order.
void SetVariable(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  std::string entry = name;
  entry.append("=").append(value);
  for (auto it = env.begin(); it != env.end(); ++it) {
    const std::string_view have = std::string_view(*it).substr(0, it->find('='));
    if (have == name) {
      *it = std::move(entry);
      return;
    }
    if (have > name) {
      env.insert(it, std::move(entry));
      return;
    }
  }
  env.push_back(std::move(entry));
}

}  // namespace

std::string EscalationRefusal(ApprovalPolicy policy) {
  // codex prints its AskForApproval variant names. It refuses under every policy but
  // on-request; on-failure gets the same text, with its own name.
  const char* name = policy == ApprovalPolicy::kOnFailure ? "OnFailure" : "Never";
  return fmt::format(
      "approval policy is {0}; reject command \u2014 you cannot ask for escalated permissions if "
      "the approval policy is {0}",
      name);
}

Result<CommandOutcome> Orchestrator::Attempt(const CommandRequest& request,
                                             const sandbox::PreparedSandbox* sandbox,
                                             Emitter& emitter, CancelToken& cancel,
                                             const AttemptRunner& runner) {
  CommandOutcome outcome;
  outcome.item_id = emitter.Start(
      CommandExecutionItem{request.display, "", std::nullopt, ItemStatus::kInProgress});

  sandbox::SpawnSpec spec{request.argv, request.workdir, env_, sandbox};
  if (!turn_.sandbox.private_tmp.empty()) {
    // The run's own /tmp: at /tmp where the mount namespace shows it there, else (no mount
    // namespace, or a command run outside the sandbox) at its path on the host.
    SetVariable(spec.env, "TMPDIR",
                sandbox != nullptr ? sandbox::CommandTmpdir(*sandbox) : turn_.sandbox.private_tmp);
  }
  // The watch's record is what on-failure reruns on; under never nothing is rerun, and the
  // note to the model makes do with the command's output (AdvisoryDenial) rather than tax
  // every write the command makes.
  spec.watch_writes = sandbox != nullptr && turn_.approval == ApprovalPolicy::kOnFailure;
  auto notes = std::make_shared<NetworkNotes>();
  if (sandbox != nullptr && turn_.proxy != nullptr) {
    spec.attach_network = [turn = &turn_, emitter = &emitter, id = outcome.item_id,
                           notes](Fd listener) -> std::unique_ptr<sandbox::NetworkAttachment> {
      return std::make_unique<ProxyAttachment>(turn->proxy->Attach(std::move(listener)), emitter,
                                               id, notes, turn);
    };
  }
  // The refusals of a command that has ended (its lease ended when its tree was reaped),
  // then its attempts past the proxy, which the watch saw (sandbox/direct_attempt.h).
  NetworkFinish finish = [notes, emitter = &emitter, id = outcome.item_id, turn = &turn_,
                          confined = sandbox != nullptr](const sandbox::WriteEvidence& writes) {
    if (confined && turn->proxy != nullptr && !notes->finished.exchange(true)) {
      for (const sandbox::DirectAttempt& attempt : writes.direct) {
        RecordConnection(DirectRecord(attempt, turn->sandbox.proxy_port), *emitter, id, *notes,
                         *turn);
      }
    }
    std::lock_guard<std::mutex> lock(notes->mu);
    return notes->lines;
  };
  auto take_notes = [&](CommandOutcome& o, const sandbox::RunResult& run) {
    o.network_notes = finish(run.writes);
  };
  if (runner) {
    Result<std::optional<sandbox::RunResult>> ran = runner(spec, outcome.item_id, finish);
    if (!ran.ok()) {
      emitter.Complete(outcome.item_id, CommandExecutionItem{request.display, ran.message() + "\n",
                                                             std::nullopt, ItemStatus::kFailed});
      return ran.error();
    }
    if (!ran->has_value()) {
      outcome.running = true;
      return outcome;
    }
    take_notes(outcome, **ran);
    return Finish(std::move(**ran), sandbox, request.workdir, std::move(outcome));
  }
  sandbox::RunLimits limits;
  limits.timeout_ms = request.timeout_ms;
  limits.max_output_bytes = turn_.command_output_max_bytes;
  std::optional<CommandProgress> progress;
  if (turn_.progress_interval_ms > 0) {
    progress.emplace(turn_.progress_interval_ms, SteadyNowMs, [&](const std::string& so_far) {
      emitter.Update(outcome.item_id, CommandExecutionItem{request.display, so_far, std::nullopt,
                                                           ItemStatus::kInProgress});
    });
    limits.on_output = [&](const char* data, size_t n) { progress->OnOutput(data, n); };
  }
  auto run = run_process_(spec, limits, cancel);
  if (!run.ok()) {
    emitter.Complete(outcome.item_id, CommandExecutionItem{request.display, run.message() + "\n",
                                                           std::nullopt, ItemStatus::kFailed});
    return run.error();
  }
  take_notes(outcome, run.value());
  return Finish(std::move(run).value(), sandbox, request.workdir, std::move(outcome));
}

CommandOutcome Orchestrator::Finish(sandbox::RunResult run, const sandbox::PreparedSandbox* sandbox,
                                    const std::string& workdir, CommandOutcome outcome) const {
  outcome.run = std::move(run);
  outcome.aggregated_output = ItemOutput(outcome.run);
  if (sandbox != nullptr) {
    outcome.denial = sandbox::FindDenial(outcome.run, turn_.sandbox);
    if (!outcome.denial) {
      outcome.denial = sandbox::AdvisoryDenial(outcome.run, turn_.sandbox, workdir);
    }
    outcome.sandbox_denied = outcome.denial.has_value();
  }
  return outcome;
}

Result<CommandOutcome> Orchestrator::RunCommand(const CommandRequest& request, Emitter& emitter,
                                                CancelToken& cancel, const AttemptRunner& runner) {
  // Before anything else: an escalation request runs nothing and shows no item (codex).
  if (request.require_escalated) return MakeError(EscalationRefusal(turn_.approval));
  if (!turn_.sandbox.unrestricted() && prepared_ == nullptr) {
    return MakeError(fmt::format(
        "command not run: the {} sandbox is not in effect, and commands never run unconfined "
        "outside danger-full-access",
        sandbox::ModeName(turn_.sandbox.mode)));
  }
  const sandbox::PreparedSandbox* confinement = turn_.sandbox.unrestricted() ? nullptr : prepared_;

  auto complete = [&](const CommandOutcome& o) {
    bool ok = o.run.exit_code == 0 && !o.run.timed_out && !o.run.cancelled;
    emitter.Complete(o.item_id,
                     CommandExecutionItem{request.display, o.aggregated_output, o.run.exit_code,
                                          ok ? ItemStatus::kCompleted : ItemStatus::kFailed});
  };

  auto first = Attempt(request, confinement, emitter, cancel, runner);
  if (!first.ok() || first->running) return first;
  complete(*first);
  // Only evidence agentexec checked itself reruns a command unconfined: a command's own words
  // ("Permission denied", SIGSYS) would let any command get itself out of the sandbox.
  if (turn_.approval != ApprovalPolicy::kOnFailure) return first;
  if (!first->denial || !first->denial->verified) {
    // Closed without evidence; but a user who chose on-failure should know why nothing reran.
    if (auto why = sandbox::UnobservedDenial(first->run, turn_.sandbox); why && confinement) {
      emitter.CompleteNew(ErrorItem{fmt::format(
          "command failed and may have been denied by the sandbox, but it is not retried outside "
          "it: agentexec could not observe the sandbox's refusals in this run ({})",
          *why)});
    }
    return first;
  }

  if (turn_.proxy != nullptr) {
    // Outside the sandbox there is no network namespace: the rerun would reach every host.
    emitter.CompleteNew(ErrorItem{fmt::format(
        "command was denied by the sandbox ({}: {}), but it is not retried outside it: the "
        "network allow-list (network.allow) holds only inside the sandbox",
        sandbox::ModeName(turn_.sandbox.mode), first->denial->evidence)});
    return first;
  }
  // on-failure: the sandbox said no; run it once more unconfined, in the open, saying why.
  emitter.CompleteNew(ErrorItem{fmt::format(
      "command was denied by the sandbox ({}: {}); retrying it once outside the sandbox because "
      "approval_policy is on-failure: {}",
      sandbox::ModeName(turn_.sandbox.mode), first->denial->evidence, request.display)});
  auto second = Attempt(request, nullptr, emitter, cancel, runner);
  if (!second.ok() || second->running) return second;
  second->sandbox_denied = false;
  second->escalated = true;
  complete(*second);
  return second;
}

}  // namespace ae
