#include "engine/tools/exec.h"

#include <chrono>
#include <filesystem>
#include <random>

#include <fmt/format.h>
#include <rapidjson/document.h>

#include "base/duration.h"
#include "base/json.h"

#include "engine/orchestrator.h"
#include "engine/tools/apply_patch/tool.h"
#include "engine/tools/model_output.h"
#include "engine/tools/shell_quote.h"

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

std::string ChunkId() {
  thread_local std::mt19937 rng(std::random_device{}());
  return fmt::format("{:06x}", rng() & 0xFFFFFF);
}

std::string DeniedNote(const TurnContext& turn) {
  return fmt::format(
      "\n\nThe {} sandbox blocked this command; approval_policy is {}, so it was not retried "
      "outside the sandbox.",
      sandbox::ModeName(turn.sandbox.mode), ApprovalPolicyName(turn.approval));
}

constexpr char kExecSpec[] =
    R"({"type":"function","name":"exec_command","description":"Runs a shell command with bash (as `bash -lc <cmd>`) in the workspace and returns its exit code and combined stdout and stderr. Output longer than the budget keeps its beginning and end.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string","description":"The shell command to run."},"workdir":{"type":"string","description":"Directory to run in, absolute or relative to the session's working directory. Defaults to the session's working directory."},"timeout_ms":{"type":"number","description":"Kill the command after this many milliseconds. Defaults to the configured command timeout."},"yield_time_ms":{"type":"number","description":"Accepted for compatibility; the command always runs to completion or timeout."},"max_output_tokens":{"type":"number","description":"Budget for the output returned, in tokens (about 4 bytes each)."},"shell":{"type":"string","description":"Shell binary to run the command with. Defaults to /bin/bash."},"login":{"type":"boolean","description":"Run the shell as a login shell (-lc). Defaults to true."}},"required":["cmd"],"additionalProperties":false}})";

constexpr char kShellSpec[] =
    R"({"type":"function","name":"shell","description":"Runs a program given as an argument vector (no shell unless you invoke one, e.g. [\"bash\", \"-lc\", \"make test\"]) and returns its exit code and combined stdout and stderr.","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"},"description":"The program and its arguments."},"workdir":{"type":"string","description":"Directory to run in, absolute or relative to the session's working directory."},"timeout_ms":{"type":"number","description":"Kill the command after this many milliseconds."}},"required":["command"],"additionalProperties":false}})";

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
    if (!workdir.ok()) return Fail(call, workdir.message());
    if (!shell.ok()) return Fail(call, shell.message());
    if (!timeout.ok()) return Fail(call, timeout.message());
    if (!max_tokens.ok()) return Fail(call, max_tokens.message());
    if (!yield.ok()) return Fail(call, yield.message());
    bool login = true;
    if (auto it = doc->FindMember("login"); it != doc->MemberEnd() && !it->value.IsNull()) {
      if (!it->value.IsBool()) {
        return Fail(call, "failed to parse function arguments: `login` must be a boolean");
      }
      login = it->value.GetBool();
    }

    if (auto heredoc = ExtractHeredocPatch(cmd)) {
      // There is no apply_patch program: a patch sent as a command is applied as a patch.
      std::string dir = ResolveWorkdir(ResolveWorkdir(env.turn.cwd, *workdir), heredoc->cd);
      ToolResult r = ApplyPatchText(heredoc->patch, dir, call, env);
      if (r.success) r.output = "Wall time: 0.0000 seconds\nOutput:\n" + r.output;
      return r;
    }

    CommandRequest req;
    req.argv = {shell->empty() ? "/bin/bash" : *shell, login ? "-lc" : "-c", cmd};
    req.workdir = ResolveWorkdir(env.turn.cwd, *workdir);
    req.timeout_ms = CommandTimeoutMs(*timeout, env.turn.command_timeout_ms);
    req.display = ShellJoin(req.argv);
    size_t budget = env.turn.model_output_max_bytes;
    if (max_tokens->has_value() && **max_tokens > 0) budget = static_cast<size_t>(**max_tokens) * 4;

    const auto start = std::chrono::steady_clock::now();
    auto outcome = env.orchestrator.RunCommand(req, env.emitter, env.cancel);
    if (!outcome.ok()) return Fail(call, outcome.message());
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string text = FormatExecCommandOutput(outcome->run, SanitizeCapture(outcome->run), budget,
                                               ChunkId(), wall);
    if (outcome->sandbox_denied) text += DeniedNote(env.turn);
    return ToolResult{call.call_id, std::move(text), outcome->run.exit_code == 0, call.custom};
  }
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
    if (outcome->sandbox_denied) text += DeniedNote(env.turn);
    return ToolResult{call.call_id, std::move(text), outcome->run.exit_code == 0, call.custom};
  }
};

}  // namespace

std::string ResolveWorkdir(const std::string& cwd, const std::string& workdir) {
  namespace fs = std::filesystem;
  fs::path p = workdir.empty() ? fs::path(cwd) : fs::path(cwd) / workdir;  // absolute wins
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::unique_ptr<ToolHandler> MakeExecCommandTool() {
  return std::make_unique<ExecCommandTool>();
}
std::unique_ptr<ToolHandler> MakeShellTool() {
  return std::make_unique<ShellTool>();
}

}  // namespace ae
