// apply_patch as a tool: the free-form custom tool codex offers (input = the patch text), also
// accepted as a function call with {"input": "<patch>"}. Not parallel-safe: it runs alone.
#pragma once

#include <memory>
#include <string>

#include "engine/tools/router.h"

namespace ae {

std::unique_ptr<ToolHandler> MakeApplyPatchTool();

// Applies `patch_text` in `turn.cwd` under `turn.sandbox`, reporting a file_change item, and
// returns the text for the model (codex's wording). Used by the tool and by exec_command
// when the model runs `apply_patch <<'EOF'` as a command.
ToolResult ApplyPatchText(const std::string& patch_text, const ToolCall& call, ToolEnv& env);

}  // namespace ae
