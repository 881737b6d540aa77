// apply_patch as a tool: the free-form custom tool codex offers (input = the patch text), also
// accepted as a function call with {"input": "<patch>"}. Not parallel-safe: it runs alone.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/tools/router.h"

namespace ae {

std::unique_ptr<ToolHandler> MakeApplyPatchTool();

// Applies `patch_text` with relative paths resolved against `cwd`, under `turn.sandbox`,
// reporting a file_change item, and returns the text for the model (codex's wording). Used
// by the tool and by the command tools when the model runs apply_patch as a command.
ToolResult ApplyPatchText(const std::string& patch_text, const std::string& cwd,
                          const ToolCall& call, ToolEnv& env);

// A script that is only `[cd DIR && ]apply_patch <<'EOF' ... EOF` (or applypatch, any
// delimiter, quoted or not): the patch and the directory, so it is applied as a patch rather
// than run (there is no apply_patch program). nullopt for anything else.
struct HeredocPatch {
  std::string patch;
  std::string cd;  // empty: no `cd`
};
std::optional<HeredocPatch> ExtractHeredocPatch(std::string_view script);

}  // namespace ae
