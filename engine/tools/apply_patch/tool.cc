#include "engine/tools/apply_patch/tool.h"

#include <chrono>

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "base/json.h"
#include "base/utf8.h"
#include "engine/exec/model_output.h"
#include "engine/tools/apply_patch/applier.h"
#include "engine/tools/apply_patch/parser.h"

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
    if (call.custom) return ApplyPatchText(call.input, env.turn.cwd, call, env);
    rapidjson::Document doc;
    // Bounded, iterative: the arguments are the model's and may nest without end.
    if (std::optional<JsonParseError> bad = ParseJsonInto(call.input, &doc)) {
      return Failed(call, fmt::format("failed to parse function arguments: {}", bad->reason));
    }
    if (!doc.IsObject()) {
      return Failed(call, "failed to parse function arguments: expected a JSON object");
    }
    // Through a const view: clang finds rapidjson's mutable-iterator == ambiguous in C++20.
    const rapidjson::Document& args = doc;
    auto it = args.FindMember("input");
    if (it == args.MemberEnd() || !it->value.IsString()) {
      return Failed(call, "failed to parse function arguments: missing string field `input`");
    }
    return ApplyPatchText(std::string(it->value.GetString(), it->value.GetStringLength()),
                          env.turn.cwd, call, env);
  }
};

}  // namespace

namespace {

// File contents in diffs (and odd bytes in paths) must not put invalid UTF-8 into events.
std::vector<FileChange> ForEvents(std::vector<FileChange> changes) {
  for (FileChange& c : changes) {
    if (!IsValidUtf8(c.path)) c.path = SanitizeUtf8(c.path);
    if (!IsValidUtf8(c.diff)) c.diff = SanitizeUtf8(c.diff);
  }
  return changes;
}

}  // namespace

ToolResult ApplyPatchText(const std::string& patch_text, const std::string& cwd,
                          const ToolCall& call, ToolEnv& env) {
  const auto start = std::chrono::steady_clock::now();
  auto report_failure = [&](std::vector<FileChange> changes, std::string message) {
    changes = ForEvents(std::move(changes));
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
  const sandbox::ConfinedFs cfs(env.turn.sandbox);
  auto plan = patch::PlanPatch(*parsed, cwd, cfs);
  if (!plan.ok()) {
    return report_failure(patch::NamedChanges(*parsed, cwd),
                          "apply_patch verification failed: " + plan.message());
  }

  std::vector<FileChange> changes = ForEvents(plan->changes);
  std::string id = env.emitter.Start(FileChangeItem{changes, ItemStatus::kInProgress});
  Status committed = patch::Commit(*plan, cfs);
  if (!committed.ok()) {
    env.emitter.Complete(id, FileChangeItem{std::move(changes), ItemStatus::kFailed});
    return Failed(call, SanitizeUtf8("apply_patch failed: " + committed.message()));
  }
  env.emitter.Complete(id, FileChangeItem{std::move(changes), ItemStatus::kCompleted});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ToolResult{
      call.call_id,
      FormatShellOutput(0, secs, "Success. Updated the following files:\n" + plan->summary), true,
      call.custom};
}

namespace {

std::string_view TrimSpace(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// One shell word at the front of `s` (bare, 'single' or "double" quoted, no expansions);
// advances `s` past it.
std::optional<std::string> TakeWord(std::string_view& s) {
  if (s.empty()) return std::nullopt;
  if (s[0] == '\'' || s[0] == '"') {
    size_t end = s.find(s[0], 1);
    if (end == std::string_view::npos) return std::nullopt;
    std::string word(s.substr(1, end - 1));
    if (s[0] == '"' && word.find_first_of("$`\\") != std::string::npos) return std::nullopt;
    s.remove_prefix(end + 1);
    return word;
  }
  size_t end = s.find_first_of(" \t\n;&|<>()$`\\'\"");
  if (end == 0) return std::nullopt;
  std::string word(s.substr(0, end));
  s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  return word;
}

bool Consume(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

void SkipBlanks(std::string_view& s) {
  while (!s.empty() && (s[0] == ' ' || s[0] == '\t')) s.remove_prefix(1);
}

}  // namespace

std::optional<HeredocPatch> ExtractHeredocPatch(std::string_view script) {
  std::string_view s = TrimSpace(script);
  HeredocPatch out;
  if (Consume(s, "cd ") || Consume(s, "cd\t")) {
    SkipBlanks(s);
    auto dir = TakeWord(s);
    if (!dir) return std::nullopt;
    SkipBlanks(s);
    if (!Consume(s, "&&")) return std::nullopt;
    SkipBlanks(s);
    out.cd = *dir;
  }
  if (!Consume(s, "apply_patch") && !Consume(s, "applypatch")) return std::nullopt;
  SkipBlanks(s);
  if (!Consume(s, "<<")) return std::nullopt;
  Consume(s, "-");
  SkipBlanks(s);
  auto delim = TakeWord(s);
  if (!delim || delim->empty()) return std::nullopt;
  SkipBlanks(s);
  if (!Consume(s, "\n")) return std::nullopt;
  // The body runs to the line that is exactly the delimiter, and nothing may follow it.
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t nl = s.find('\n', pos);
    std::string_view line = s.substr(pos, nl == std::string_view::npos ? s.npos : nl - pos);
    if (TrimSpace(line) == *delim) {
      if (nl != std::string_view::npos && !TrimSpace(s.substr(nl)).empty()) return std::nullopt;
      out.patch = std::string(s.substr(0, pos));
      return out;
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return std::nullopt;
}

std::unique_ptr<ToolHandler> MakeApplyPatchTool() {
  return std::make_unique<ApplyPatchTool>();
}

}  // namespace ae
