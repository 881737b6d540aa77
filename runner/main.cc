// agentexec: parse -> load config -> run one session -> exit code. Nothing else lives here.
#include <cstdio>
#include <cstring>

#include "runner/sandbox_command.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "sandbox") == 0) {
    return ae::SandboxCommandMain(argc - 1, argv + 1);
  }
  std::fputs("agentexec: not wired yet\n", stderr);
  return 2;
}
