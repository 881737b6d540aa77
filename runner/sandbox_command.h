// `agentexec sandbox [-s MODE] [--add-dir DIR]... [-c KEY=VALUE]... [--] COMMAND [ARGS]...`:
// run one command under the sandbox the configuration asks for (read as for a run: config
// files, profile, project, -c, flags), its exit status passed through.
#pragma once

#include "runner/cli.h"

namespace ae {

// `args.sandbox_command` is set (ParseCli saw `sandbox`). Returns only when the command could
// not be started; otherwise the command replaces this process (or it stays as the command's
// supervisor and exits as the command does).
int RunSandboxCommand(const CliArgs& args);

}  // namespace ae
