// write_stdin: codex's companion to exec_command. Writes `chars` to a running session's
// terminal (empty chars only polls) and answers with what the process printed since the last
// answer, "Process running with session ID N" or "Process exited with code C".
#include <fmt/format.h>
#include <rapidjson/document.h>

#include "base/json.h"
#include "engine/tools/unified_exec.h"

namespace ae {
namespace {

constexpr char kWriteStdinSpec[] =
    R"({"type":"function","name":"write_stdin","description":"Writes characters to an existing unified exec session and returns recent output.","strict":false,"parameters":{"type":"object","properties":{"session_id":{"type":"number","description":"Identifier of the running unified exec session."},"chars":{"type":"string","description":"Bytes to write to stdin (may be empty to poll)."},"yield_time_ms":{"type":"number","description":"How long to wait (in milliseconds) for output before yielding."},"max_output_tokens":{"type":"number","description":"Maximum number of tokens to return. Excess output will be truncated."}},"required":["session_id"],"additionalProperties":false}})";

ToolResult Fail(const ToolCall& call, std::string message) {
  return ToolResult{call.call_id, std::move(message), false, call.custom};
}

// A whole number within [min, max], or an error naming the field.
Result<int64_t> Integer(const rapidjson::Value& obj, const char* name, int64_t fallback,
                        bool required) {
  auto it = obj.FindMember(name);
  if (it == obj.MemberEnd() || it->value.IsNull()) {
    if (required) {
      return MakeError(fmt::format("failed to parse function arguments: missing field `{}`", name));
    }
    return fallback;
  }
  if (it->value.IsInt64()) return it->value.GetInt64();
  if (it->value.IsNumber()) {
    double d = it->value.GetDouble();
    if (d >= -9e15 && d <= 9e15 && d == static_cast<double>(static_cast<int64_t>(d))) {
      return static_cast<int64_t>(d);
    }
    if (!required && d > 9e15) return INT64_C(9000000000000000);
  }
  return MakeError(
      fmt::format("failed to parse function arguments: `{}` must be a whole number", name));
}

class WriteStdinTool : public ToolHandler {
 public:
  explicit WriteStdinTool(std::shared_ptr<UnifiedExec> manager) : manager_(std::move(manager)) {}
  std::string name() const override { return "write_stdin"; }
  std::string spec_json() const override { return kWriteStdinSpec; }
  bool parallel_safe() const override { return true; }

  ToolResult Handle(const ToolCall& call, ToolEnv& env) override {
    rapidjson::Document doc;
    if (std::optional<JsonParseError> bad = ParseJsonInto(call.input, &doc)) {
      return Fail(call, fmt::format("failed to parse function arguments: {} at offset {}",
                                    bad->reason, bad->offset));
    }
    if (!doc.IsObject()) {
      return Fail(call, "failed to parse function arguments: expected a JSON object");
    }
    auto id = Integer(doc, "session_id", 0, true);
    if (!id.ok()) return Fail(call, id.message());
    std::string chars;
    if (auto it = doc.FindMember("chars"); it != doc.MemberEnd() && !it->value.IsNull()) {
      if (!it->value.IsString()) {
        return Fail(call, "failed to parse function arguments: `chars` must be a string");
      }
      chars.assign(it->value.GetString(), it->value.GetStringLength());
    }
    auto yield = Integer(doc, "yield_time_ms", kDefaultWriteYieldMs, false);
    if (!yield.ok()) return Fail(call, yield.message());
    auto tokens = Integer(doc, "max_output_tokens", 0, false);
    if (!tokens.ok()) return Fail(call, tokens.message());
    size_t budget = env.turn.model_output_max_bytes;
    if (*tokens > 0) budget = static_cast<size_t>(std::min<int64_t>(*tokens, INT64_C(1) << 40)) * 4;

    auto reply = manager_->Write(*id, chars, ClampWriteYieldMs(*yield, chars.empty()), budget);
    if (!reply.ok()) return Fail(call, "write_stdin failed: " + reply.message());
    return ToolResult{call.call_id, std::move(reply->text), reply->success, call.custom};
  }

 private:
  std::shared_ptr<UnifiedExec> manager_;
};

}  // namespace

std::unique_ptr<ToolHandler> MakeWriteStdinTool(std::shared_ptr<UnifiedExec> manager) {
  return std::make_unique<WriteStdinTool>(std::move(manager));
}

}  // namespace ae
