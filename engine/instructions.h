// What the model is told before the user's prompt: who it is and how to work (ours),
// the sandbox and approval situation, the environment, and the project's AGENTS.md.
#pragma once

#include <string>
#include <vector>

#include "engine/exec/turn_context.h"

namespace ae {

// The developer message: base instructions, then permissions, then config's extra text.
std::string DeveloperInstructions(const TurnContext& turn, const std::string& extra);
// <environment_context>…</environment_context>, sent as a user message.
std::string EnvironmentContext(const TurnContext& turn, const std::string& date,
                               const std::string& timezone);
// AGENTS.md files from the git root down to cwd, concatenated within max_bytes; empty when
// there are none. Sent as a user message. Each is opened beneath the directory the search
// starts from (the git root, or cwd outside a repository) and read only when it is a regular
// file on a real file system (base/read_file.h): a pull request can commit AGENTS.md as a
// symlink to /proc/self/environ, which agentexec, unconfined, would read as its own
// environment. A file that is there but refused is skipped, and `warnings` gets a line naming
// it and why.
// `global`: the user's own instructions (GlobalInstructions), sent before the project's as
// codex sends them: "# AGENTS.md instructions" with the global text alone, otherwise
// "... for CWD" with the two joined by a "--- project-doc ---" line.
std::string ProjectDocs(const std::string& cwd, size_t max_bytes,
                        std::vector<std::string>* warnings, const std::string& global = {});

// The user's global instructions: in the first of `homes` (empty ones skipped) that holds one,
// AGENTS.override.md, else AGENTS.md, trimmed of surrounding blank space; empty when none has
// any. Read as the project's are (a regular file, at most max_bytes); a refused file is
// named in `warnings`.
std::string GlobalInstructions(const std::vector<std::string>& homes, size_t max_bytes,
                               std::vector<std::string>* warnings);

}  // namespace ae
