// The command tools: exec_command (a shell script string, run as `/bin/bash -lc '<cmd>'`) and
// shell (an argv array, run as given). Both go through the orchestrator, which applies the
// sandbox and approval policy and reports command_execution items.
#pragma once

#include <memory>

#include "engine/tools/router.h"

namespace ae {

std::unique_ptr<ToolHandler> MakeExecCommandTool();
std::unique_ptr<ToolHandler> MakeShellTool();

// `workdir` as the model gave it, resolved against the session cwd and normalised.
std::string ResolveWorkdir(const std::string& cwd, const std::string& workdir);

}  // namespace ae
