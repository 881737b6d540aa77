// The environment model-run commands see, from shell_environment_policy:
// inherit all/core/none, drop names containing KEY, SECRET or TOKEN unless told not to,
// `exclude` globs, the credential variables (always: AGENTEXEC_API_KEY, CODEX_API_KEY,
// OPENAI_API_KEY and ShellEnvPolicy::credential_vars), `set`, then `include_only` globs.
#pragma once

#include <string>
#include <vector>

#include "engine/exec/turn_context.h"

namespace ae {

// `parent` holds "NAME=value" entries (the agent's own environment). The result is sorted by
// name. `network_disabled` adds CODEX_SANDBOX_NETWORK_DISABLED=1 as codex does.
std::vector<std::string> BuildCommandEnv(const ShellEnvPolicy& policy,
                                         const std::vector<std::string>& parent,
                                         bool network_disabled);

// `env` (sorted "NAME=value" entries) with what codex sets for every exec_command session on
// top, whatever the policy said: no colour (NO_COLOR=1, TERM=dumb, COLORTERM empty), UTF-8
// (LANG, LC_CTYPE, LC_ALL = C.UTF-8), no pager (PAGER, GIT_PAGER, GH_PAGER = cat: a pager
// would wait for keys on a terminal session, or fill the output with escapes) and CODEX_CI=1.
// Sorted by name.
std::vector<std::string> WithUnifiedExecEnv(std::vector<std::string> env);

// The current process's environment as "NAME=value" entries.
std::vector<std::string> ProcessEnvironment();

}  // namespace ae
