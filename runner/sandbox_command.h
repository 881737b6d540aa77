// `agentexec sandbox [-s MODE] [--add-dir DIR]... -- COMMAND [ARGS]...`: run one command
// under the sandbox policy, exit code passed through.
#pragma once

namespace ae {

// argv[0] is "sandbox" (everything after the program name and an optional "exec").
int SandboxCommandMain(int argc, char** argv);

}  // namespace ae
