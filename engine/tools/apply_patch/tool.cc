#include "engine/tools/apply_patch/tool.h"

#include <chrono>

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "engine/tools/apply_patch/applier.h"
#include "engine/tools/apply_patch/parser.h"
#include "engine/tools/model_output.h"

namespace ae {
namespace {

// The format codex sends for its free-form apply_patch tool: a Lark grammar of the patch.
constexpr char kGrammar[] = R"(start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
)";

std::string SpecJson() {
  rapidjson::Document d(rapidjson::kObjectType);
  auto& a = d.GetAllocator();
  d.AddMember("type", "custom", a);
  d.AddMember("name", "apply_patch", a);
  d.AddMember("description",
              "Edits files with a patch in the `*** Begin Patch` format: add, delete, update or "
              "move files. Send the patch text itself, not JSON.",
              a);
  rapidjson::Value format(rapidjson::kObjectType);
  format.AddMember("type", "grammar", a);
  format.AddMember("syntax", "lark", a);
  format.AddMember("definition", rapidjson::StringRef(kGrammar), a);
  d.AddMember("format", format, a);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  d.Accept(w);
  return buf.GetString();
}

ToolResult Failed(const ToolCall& call, std::string message) {
  return ToolResult{call.call_id, std::move(message), false, call.custom};
}

class ApplyPatchTool : public ToolHandler {
 public:
  std::string name() const override { return "apply_patch"; }
  std::string spec_json() const override { return SpecJson(); }
  bool parallel_safe() const override { return false; }

  ToolResult Handle(const ToolCall& call, ToolEnv& env) override {
    if (call.custom) return ApplyPatchText(call.input, call, env);
    rapidjson::Document doc;
    doc.Parse(call.input.c_str(), call.input.size());
    if (doc.HasParseError() || !doc.IsObject()) {
      return Failed(
          call, fmt::format("failed to parse function arguments: {}",
                            doc.HasParseError() ? rapidjson::GetParseError_En(doc.GetParseError())
                                                : "expected a JSON object"));
    }
    auto it = doc.FindMember("input");
    if (it == doc.MemberEnd() || !it->value.IsString()) {
      return Failed(call, "failed to parse function arguments: missing string field `input`");
    }
    return ApplyPatchText(std::string(it->value.GetString(), it->value.GetStringLength()), call,
                          env);
  }
};

}  // namespace

ToolResult ApplyPatchText(const std::string& patch_text, const ToolCall& call, ToolEnv& env) {
  const auto start = std::chrono::steady_clock::now();
  const std::string& cwd = env.turn.cwd;
  auto report_failure = [&](std::vector<FileChange> changes, std::string message) {
    std::string id = env.emitter.Start(FileChangeItem{changes, ItemStatus::kInProgress});
    env.emitter.Complete(id, FileChangeItem{std::move(changes), ItemStatus::kFailed});
    return Failed(call, std::move(message));
  };

  auto parsed = patch::ParsePatch(patch_text);
  if (!parsed.ok()) {
    return report_failure({}, "apply_patch verification failed: " + parsed.message());
  }
  if (parsed->hunks.empty()) {
    return report_failure({}, "apply_patch verification failed: No files were modified.");
  }
  Status writable = patch::CheckWritable(*parsed, cwd, env.turn.sandbox);
  if (!writable.ok()) {
    return report_failure(patch::NamedChanges(*parsed, cwd),
                          "apply_patch rejected: " + writable.message() + ". No file was changed.");
  }
  auto plan = patch::PlanPatch(*parsed, cwd);
  if (!plan.ok()) {
    return report_failure(patch::NamedChanges(*parsed, cwd),
                          "apply_patch verification failed: " + plan.message());
  }

  std::string id = env.emitter.Start(FileChangeItem{plan->changes, ItemStatus::kInProgress});
  Status committed = patch::Commit(*plan);
  if (!committed.ok()) {
    env.emitter.Complete(id, FileChangeItem{plan->changes, ItemStatus::kFailed});
    return Failed(call, "apply_patch failed: " + committed.message());
  }
  env.emitter.Complete(id, FileChangeItem{plan->changes, ItemStatus::kCompleted});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ToolResult{
      call.call_id,
      FormatShellOutput(0, secs, "Success. Updated the following files:\n" + plan->summary), true,
      call.custom};
}

std::unique_ptr<ToolHandler> MakeApplyPatchTool() {
  return std::make_unique<ApplyPatchTool>();
}

}  // namespace ae
