#include "sandbox/denial.h"

#include <gtest/gtest.h>

#include <csignal>

namespace ae::sandbox {
namespace {

RunResult Exited(int code, std::string output) {
  RunResult r;
  r.exit_code = code;
  r.output = std::move(output);
  return r;
}

TEST(Denial, SandboxWordingOnFailure) {
  EXPECT_TRUE(LooksSandboxDenied(Exited(1, "touch: cannot touch '/etc/x': Read-only file system")));
  EXPECT_TRUE(LooksSandboxDenied(Exited(1, "sh: 1: cannot create /x: Permission denied\n")));
  EXPECT_TRUE(LooksSandboxDenied(Exited(1, "PermissionError: [Errno 1] Operation not permitted")));
  EXPECT_TRUE(LooksSandboxDenied(Exited(2, "OPERATION NOT PERMITTED")));
}

TEST(Denial, OrdinaryFailuresAndSuccesses) {
  EXPECT_FALSE(LooksSandboxDenied(Exited(1, "grep found nothing")));
  EXPECT_FALSE(LooksSandboxDenied(Exited(0, "Permission denied (but exit 0)")));
  RunResult timed_out = Exited(124, "Permission denied");
  timed_out.timed_out = true;
  EXPECT_FALSE(LooksSandboxDenied(timed_out));
}

TEST(Denial, SigsysAndSetupErrors) {
  RunResult sigsys = Exited(128 + SIGSYS, "");
  sigsys.term_signal = SIGSYS;
  EXPECT_TRUE(LooksSandboxDenied(sigsys));
  RunResult setup = Exited(126, "");
  setup.setup_error = "sandbox: landlock_restrict_self: Operation not permitted";
  EXPECT_TRUE(LooksSandboxDenied(setup));
  RunResult missing = Exited(127, "execve: nosuch: No such file or directory\n");
  missing.setup_error = "execve: nosuch: No such file or directory";
  EXPECT_FALSE(LooksSandboxDenied(missing));
}

}  // namespace
}  // namespace ae::sandbox
