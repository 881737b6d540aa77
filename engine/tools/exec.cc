#include "engine/tools/exec.h"

#include "base/path.h"

#include <filesystem>

#include <fmt/format.h>
#include <rapidjson/document.h>

#include "base/duration.h"
#include "base/json.h"
#include "base/path.h"

#include "engine/exec/model_output.h"
#include "engine/exec/orchestrator.h"
#include "engine/exec/shell_quote.h"
#include "engine/tools/apply_patch/tool.h"
#include "engine/tools/unified_exec.h"

namespace ae {
namespace {

ToolResult Fail(const ToolCall& call, std::string message) {
  return ToolResult{call.call_id, std::move(message), false, call.custom};
}

Result<rapidjson::Document> ParseArgs(const std::string& input) {
  rapidjson::Document doc;
  if (std::optional<JsonParseError> bad = ParseJsonInto(input, &doc)) {
    return MakeError(fmt::format("failed to parse function arguments: {} at offset {}", bad->reason,
                                 bad->offset));
  }
  if (!doc.IsObject()) {
    return MakeError("failed to parse function arguments: expected a JSON object");
  }
  return doc;
}

// Optional number field, as a double (1e300 must not meet an int64 conversion); an error
// names the field and what was expected.
Result<std::optional<double>> OptionalNumber(const rapidjson::Value& obj, const char* name) {
  auto it = obj.FindMember(name);
  if (it == obj.MemberEnd() || it->value.IsNull()) return std::optional<double>{};
  if (it->value.IsNumber()) return std::optional<double>{it->value.GetDouble()};
  return MakeError(fmt::format("failed to parse function arguments: `{}` must be a number", name));
}

// Optional integer field: a number clamped into [0, 2^53] before it becomes an integer.
Result<std::optional<int64_t>> OptionalInt(const rapidjson::Value& obj, const char* name) {
  Result<std::optional<double>> n = OptionalNumber(obj, name);
  if (!n.ok()) return n.error();
  if (!n->has_value()) return std::optional<int64_t>{};
  const double v = **n;
  if (!(v > 0)) return std::optional<int64_t>{0};
  return std::optional<int64_t>{static_cast<int64_t>(std::min(v, 9007199254740992.0))};
}

// The model's timeout_ms against the configured one: it may lower it, never raise it above
// the user's limit or switch it off (base/duration.h).
int64_t CommandTimeoutMs(const std::optional<double>& requested, int64_t configured) {
  return requested ? LowerLimitMs(*requested, configured) : ClampDurationMs(configured);
}

Result<std::string> OptionalString(const rapidjson::Value& obj, const char* name) {
  auto it = obj.FindMember(name);
  if (it == obj.MemberEnd() || it->value.IsNull()) return std::string();
  if (!it->value.IsString()) {
    return MakeError(
        fmt::format("failed to parse function arguments: `{}` must be a string", name));
  }
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

// sandbox_permissions: "use_default" (or absent) or "require_escalated"; anything else is
// refused as codex's serde would.
Result<bool> RequireEscalated(const rapidjson::Value& obj) {
  Result<std::string> v = OptionalString(obj, "sandbox_permissions");
  if (!v.ok()) return v.error();
  if (v->empty() || *v == "use_default") return false;
  if (*v == "require_escalated") return true;
  return MakeError(fmt::format(
      "failed to parse function arguments: unknown variant `{}`, expected `use_default` or "
      "`require_escalated`",
      *v));
}

}  // namespace

std::string SandboxDeniedNote(const TurnContext& turn, bool only_wording) {
  if (only_wording) {
    return fmt::format(
        "\n\nThe {} sandbox may have blocked this command (it failed with a permission error); "
        "approval_policy is {}, so it was not retried outside the sandbox.",
        sandbox::ModeName(turn.sandbox.mode), ApprovalPolicyName(turn.approval));
  }
  return fmt::format(
      "\n\nThe {} sandbox blocked this command; approval_policy is {}, so it was not retried "
      "outside the sandbox.",
      sandbox::ModeName(turn.sandbox.mode), ApprovalPolicyName(turn.approval));
}

namespace {

constexpr char kExecSpec[] =
    R"({"type":"function","name":"exec_command","description":"Runs a command (as `bash -lc <cmd>` unless another shell is given), returning its output, or a session ID when it is still running after yield_time_ms; poll or feed a running session with write_stdin.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string","description":"Shell command to execute."},"workdir":{"type":"string","description":"Optional working directory to run the command in; defaults to the turn cwd."},"shell":{"type":"string","description":"Shell binary to launch. Defaults to /bin/bash."},"login":{"type":"boolean","description":"Whether to run the shell with -l/-i semantics. Defaults to true."},"tty":{"type":"boolean","description":"Whether to allocate a TTY for the command. Defaults to false (plain pipes); set to true to open a PTY and access TTY process."},"yield_time_ms":{"type":"number","description":"How long to wait (in milliseconds) for output before yielding."},"max_output_tokens":{"type":"number","description":"Maximum number of tokens to return. Excess output will be truncated."},"timeout_ms":{"type":"number","description":"Kill the command after this many milliseconds, running or in the background."},"sandbox_permissions":{"type":"string","description":"Sandbox permissions for the command. Set to \"require_escalated\" to request running without sandbox restrictions; defaults to \"use_default\"."},"justification":{"type":"string","description":"Only set if sandbox_permissions is \"require_escalated\". Request approval from the user to run this command outside the sandbox."}},"required":["cmd"],"additionalProperties":false}})";

constexpr char kShellSpec[] =
    R"({"type":"function","name":"shell","description":"Runs a program given as an argument vector (no shell unless you invoke one, e.g. [\"bash\", \"-lc\", \"make test\"]) and returns its exit code and combined stdout and stderr.","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"},"description":"The program and its arguments."},"workdir":{"type":"string","description":"Directory to run in, absolute or relative to the session's working directory."},"timeout_ms":{"type":"number","description":"Kill the command after this many milliseconds."},"sandbox_permissions":{"type":"string","description":"Sandbox permissions for the command. Set to \"require_escalated\" to request running without sandbox restrictions; defaults to \"use_default\"."},"justification":{"type":"string","description":"Only set if sandbox_permissions is \"require_escalated\"."}},"required":["command"],"additionalProperties":false}})";

// `["apply_patch", "<patch>"]`, or a shell running only an apply_patch heredoc.
std::optional<HeredocPatch> PatchInArgv(const std::vector<std::string>& argv) {
  if (argv.size() == 2 && (argv[0] == "apply_patch" || argv[0] == "applypatch")) {
    return HeredocPatch{argv[1], ""};
  }
  if (argv.size() == 3 && (argv[1] == "-lc" || argv[1] == "-c")) {
    std::string shell = std::filesystem::path(argv[0]).filename().string();
    if (shell == "bash" || shell == "sh" || shell == "zsh") return ExtractHeredocPatch(argv[2]);
  }
  return std::nullopt;
}

class ExecCommandTool : public ToolHandler {
 public:
  explicit ExecCommandTool(std::shared_ptr<UnifiedExec> manager) : manager_(std::move(manager)) {}
  std::string name() const override { return "exec_command"; }
  std::string spec_json() const override { return kExecSpec; }
  bool parallel_safe() const override { return true; }

  ToolResult Handle(const ToolCall& call, ToolEnv& env) override {
    auto doc = ParseArgs(call.input);
    if (!doc.ok()) return Fail(call, doc.message());
    auto cmd_it = doc->FindMember("cmd");
    if (cmd_it == doc->MemberEnd()) {
      return Fail(call, "failed to parse function arguments: missing field `cmd`");
    }
    if (!cmd_it->value.IsString()) {
      return Fail(call, "failed to parse function arguments: `cmd` must be a string");
    }
    std::string cmd(cmd_it->value.GetString(), cmd_it->value.GetStringLength());
    auto workdir = OptionalString(*doc, "workdir");
    auto shell = OptionalString(*doc, "shell");
    auto timeout = OptionalNumber(*doc, "timeout_ms");
    auto max_tokens = OptionalInt(*doc, "max_output_tokens");
    auto yield = OptionalInt(*doc, "yield_time_ms");
    auto escalated = RequireEscalated(*doc);
    if (!workdir.ok()) return Fail(call, workdir.message());
    if (!shell.ok()) return Fail(call, shell.message());
    if (!timeout.ok()) return Fail(call, timeout.message());
    if (!max_tokens.ok()) return Fail(call, max_tokens.message());
    if (!yield.ok()) return Fail(call, yield.message());
    if (!escalated.ok()) return Fail(call, escalated.message());
    auto flag = [&](const char* name, bool fallback) -> Result<bool> {
      auto it = doc->FindMember(name);
      if (it == doc->MemberEnd() || it->value.IsNull()) return fallback;
      if (!it->value.IsBool()) {
        return MakeError(
            fmt::format("failed to parse function arguments: `{}` must be a boolean", name));
      }
      return it->value.GetBool();
    };
    auto login = flag("login", true);
    auto tty = flag("tty", false);
    if (!login.ok()) return Fail(call, login.message());
    if (!tty.ok()) return Fail(call, tty.message());
    // codex refuses an escalation request before anything else, patches included.
    if (*escalated) return Fail(call, EscalationRefusal(env.turn.approval));

    if (auto heredoc = ExtractHeredocPatch(cmd)) {
      // There is no apply_patch program: a patch sent as a command is applied as a patch.
      std::string dir = ResolveWorkdir(ResolveWorkdir(env.turn.cwd, *workdir), heredoc->cd);
      ToolResult r = ApplyPatchText(heredoc->patch, dir, call, env);
      if (r.success) r.output = "Wall time: 0.0000 seconds\nOutput:\n" + r.output;
      return r;
    }

    UnifiedExecRequest req;
    req.command.argv = {shell->empty() ? "/bin/bash" : *shell, *login ? "-lc" : "-c", cmd};
    req.command.workdir = ResolveWorkdir(env.turn.cwd, *workdir);
    // Only the model's own timeout_ms ends a command here (never above the configured one):
    // one still running at its yield becomes a session, bounded by the turn.
    req.command.timeout_ms =
        timeout->has_value() ? LowerLimitMs(**timeout, env.turn.command_timeout_ms) : 0;
    req.command.display = ShellJoin(req.command.argv);
    req.tty = *tty;
    req.yield_ms = ClampExecYieldMs(yield->value_or(kDefaultExecYieldMs));
    req.budget_bytes = env.turn.model_output_max_bytes;
    if (max_tokens->has_value() && **max_tokens > 0) {
      req.budget_bytes = static_cast<size_t>(**max_tokens) * 4;
    }
    auto reply = manager_->Exec(req, env);
    if (!reply.ok()) return Fail(call, reply.message());
    return ToolResult{call.call_id, std::move(reply->text), reply->success, call.custom,
                      std::move(reply->model_warning)};
  }

  void StopBackground(Emitter& /*emitter*/) override { manager_->StopAll(); }

 private:
  std::shared_ptr<UnifiedExec> manager_;
};

class ShellTool : public ToolHandler {
 public:
  std::string name() const override { return "shell"; }
  std::string spec_json() const override { return kShellSpec; }
  bool parallel_safe() const override { return true; }

  ToolResult Handle(const ToolCall& call, ToolEnv& env) override {
    auto doc = ParseArgs(call.input);
    if (!doc.ok()) return Fail(call, doc.message());
    auto it = doc->FindMember("command");
    if (it == doc->MemberEnd()) {
      return Fail(call, "failed to parse function arguments: missing field `command`");
    }
    if (!it->value.IsArray() || it->value.Empty()) {
      return Fail(call,
                  "failed to parse function arguments: `command` must be a non-empty array of "
                  "strings");
    }
    CommandRequest req;
    for (const auto& v : it->value.GetArray()) {
      if (!v.IsString()) {
        return Fail(call,
                    "failed to parse function arguments: `command` must be a non-empty array of "
                    "strings");
      }
      req.argv.emplace_back(v.GetString(), v.GetStringLength());
    }
    auto workdir = OptionalString(*doc, "workdir");
    if (!workdir.ok()) return Fail(call, workdir.message());
    auto timeout = OptionalNumber(*doc, "timeout_ms");
    if (!timeout.ok()) return Fail(call, timeout.message());
    if (!timeout->has_value()) {
      timeout = OptionalNumber(*doc, "timeout");  // older codex name
      if (!timeout.ok()) return Fail(call, timeout.message());
    }
    auto escalated = RequireEscalated(*doc);
    if (!escalated.ok()) return Fail(call, escalated.message());
    if (*escalated) return Fail(call, EscalationRefusal(env.turn.approval));
    req.workdir = ResolveWorkdir(env.turn.cwd, *workdir);
    if (auto patch = PatchInArgv(req.argv)) {
      return ApplyPatchText(patch->patch, ResolveWorkdir(req.workdir, patch->cd), call, env);
    }
    req.timeout_ms = CommandTimeoutMs(*timeout, env.turn.command_timeout_ms);
    req.display = ShellJoin(req.argv);

    auto outcome = env.orchestrator.RunCommand(req, env.emitter, env.cancel);
    if (!outcome.ok()) return Fail(call, outcome.message());
    std::string text = FormatShellOutput(outcome->run, SanitizeCapture(outcome->run),
                                         env.turn.model_output_max_bytes);
    if (outcome->sandbox_denied) {
      text += SandboxDeniedNote(env.turn, outcome->denial->only_wording);
    }
    for (const std::string& note : outcome->network_notes) text += "\n" + note;
    return ToolResult{call.call_id, std::move(text), outcome->run.exit_code == 0, call.custom};
  }
};

}  // namespace

std::string ResolveWorkdir(const std::string& cwd, const std::string& workdir) {
  return ResolvedPath(cwd, workdir);  // absolute wins; "" is cwd itself
}

std::unique_ptr<ToolHandler> MakeExecCommandTool(std::shared_ptr<UnifiedExec> manager) {
  return std::make_unique<ExecCommandTool>(std::move(manager));
}
std::unique_ptr<ToolHandler> MakeShellTool() {
  return std::make_unique<ShellTool>();
}

}  // namespace ae
