// agentexec: parse -> load config -> run one session -> exit code. Nothing else lives here.
#include <cstdio>

int main(int, char**) {
  std::fputs("agentexec: not wired yet\n", stderr);
  return 2;
}
