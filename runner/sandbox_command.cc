// Placeholder until the sandbox lands: refuse rather than run unconfined.
#include "runner/sandbox_command.h"

#include <cstdio>

namespace ae {

int SandboxCommandMain(int, char**) {
  std::fputs("agentexec sandbox: not available in this build\n", stderr);
  return 3;
}

}  // namespace ae
