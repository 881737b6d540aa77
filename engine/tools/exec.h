// The command tools: exec_command (a shell script string, run as `/bin/bash -lc '<cmd>'`,
// through unified exec: it may outlive its yield as a session, engine/tools/unified_exec.h)
// and shell (an argv array, run as given to completion). Both go through the orchestrator,
// which applies the sandbox and approval policy and reports command_execution items.
#pragma once

#include <memory>

#include "engine/tools/router.h"

namespace ae {

class UnifiedExec;

std::unique_ptr<ToolHandler> MakeExecCommandTool(std::shared_ptr<UnifiedExec> manager);
std::unique_ptr<ToolHandler> MakeShellTool();

// Appended to the model's copy of a command's output when the sandbox likely blocked it; with
// `only_wording` (its permission error was all there was to go on), that it may have.
std::string SandboxDeniedNote(const TurnContext& turn, bool only_wording);

// `workdir` as the model gave it, resolved against the session cwd and normalised.
std::string ResolveWorkdir(const std::string& cwd, const std::string& workdir);

}  // namespace ae
