// `agentexec sandbox [-s MODE] [--add-dir DIR]... [-c KEY=VALUE]... [--] COMMAND [ARGS]...`:
// run one command under the sandbox the configuration asks for (read as for a run: config
// files, profile, project, -c, flags), its exit status passed through.
#pragma once

#include "cli/cli.h"

namespace ae {

// `args.sandbox_command` is set (ParseCli saw `sandbox`). Returns only when the command could
// not be started; otherwise the command replaces this process (or it stays as the command's
// supervisor and exits as the command does).
int RunSandboxCommand(const CliArgs& args);

// `--print-writable-roots` (with `exec`'s options or `sandbox`'s): the host paths a run under
// this configuration lets its commands write, one a line ("/" for danger-full-access, nothing
// for read-only), without the run's own /tmp, which each run makes afresh under /tmp and which
// holds nothing of anyone else's, and with the configured roots that do not exist yet (a run
// started once they do gets them). Exit 0, or 2 for a configuration error.
int PrintWritableRoots(const CliArgs& args);

}  // namespace ae
