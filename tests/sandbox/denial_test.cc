// FindDenial: only evidence agentexec checks itself counts. Paths are checked against a real
// policy and the real file system; wording alone, SIGSYS, exit 0 are no evidence.
#include "sandbox/denial.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::ScratchDir;
using testing::Sh;

RunResult Exited(int code, std::string output) {
  RunResult r;
  r.exit_code = code;
  r.output = std::move(output);
  return r;
}

class DenialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char* real = ::realpath(dir_.path().c_str(), nullptr);
    base_ = real;
    std::free(real);
    Sh("mkdir -p ws/.git/hooks outside", base_);
    policy_.mode = Mode::kWorkspaceWrite;
    policy_.writable_roots = {ws()};
    policy_.read_only_carveouts = {ws() + "/.git", ws() + "/.agentexec"};
  }
  std::string ws() const { return base_ + "/ws"; }
  std::optional<Denial> Find(const RunResult& r) const { return FindDenial(r, policy_, ws()); }

  ScratchDir dir_;
  std::string base_;
  Policy policy_;
};

TEST_F(DenialTest, WordingAloneIsNoEvidence) {
  EXPECT_FALSE(Find(Exited(1, "Permission denied\n")));
  EXPECT_FALSE(Find(Exited(1, "PERMISSION DENIED")));
  EXPECT_FALSE(Find(Exited(2, "error: Operation not permitted\nRead-only file system\n")));
  // A file inside the workspace (e.g. mode 000) is not the sandbox's doing.
  EXPECT_FALSE(Find(Exited(1, "cat: ./secret.txt: Permission denied\n")));
  EXPECT_FALSE(Find(Exited(1, "cat: '" + ws() + "/secret.txt': Permission denied\n")));
}

TEST_F(DenialTest, SigsysAndSuccessAreNoEvidence) {
  RunResult sigsys;
  sigsys.exit_code = 128 + SIGSYS;
  sigsys.term_signal = SIGSYS;
  EXPECT_FALSE(Find(sigsys));
  EXPECT_FALSE(
      Find(Exited(0, "touch: cannot touch '" + base_ + "/outside/x': Read-only file system")));
  RunResult timed_out = Exited(124, "sh: " + base_ + "/outside/x: Permission denied");
  timed_out.timed_out = true;
  EXPECT_FALSE(Find(timed_out));
}

TEST_F(DenialTest, APathOutsideTheRootsThatAgentexecCanWriteIsEvidence) {
  auto d =
      Find(Exited(1, "touch: cannot touch '" + base_ + "/outside/x': Read-only file system\n"));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->verified);
  EXPECT_EQ(d->evidence, "writing " + base_ +
                             "/outside/x is refused by the policy (outside the writable roots) "
                             "and allowed outside it");
  // Relative, unquoted, GNU's curly quotes, Python's repr: all read the same way.
  EXPECT_TRUE(Find(Exited(1, "sh: 1: cannot create ../outside/y: Permission denied\n")));
  EXPECT_TRUE(Find(Exited(1, "mkdir: cannot create directory \u2018" + base_ +
                                 "/outside/d\u2019: Read-only file system\n")));
  EXPECT_TRUE(Find(
      Exited(1, "PermissionError: [Errno 13] Permission denied: '" + base_ + "/outside/p'\n")));
}

TEST_F(DenialTest, ACarveOutIsEvidenceAtAnyDepth) {
  auto d = Find(Exited(1, "sh: 1: cannot create .git/hooks/pre-commit: Read-only file system\n"));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->verified);
  EXPECT_EQ(d->evidence, "writing " + ws() +
                             "/.git/hooks/pre-commit is refused by the policy (a read-only .git "
                             "or .agentexec) and allowed outside it");
  EXPECT_TRUE(Find(Exited(1, "touch: cannot touch 'sub/.git/config': Permission denied\n")));
}

TEST_F(DenialTest, APathAgentexecCannotWriteEitherIsNotTheSandbox) {
  // sysctl files are read-only even for root: the sandbox is not what refused the write.
  EXPECT_FALSE(
      Find(Exited(1, "sh: 1: cannot create /proc/sys/kernel/ostype: Permission denied\n")));
}

TEST_F(DenialTest, SetupFailureOfTheSandboxIsEvidenceExecFailureIsNot) {
  RunResult setup;
  setup.exit_code = 126;
  setup.setup_error = "sandbox: landlock_restrict_self: Operation not permitted";
  auto d = Find(setup);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->verified);
  EXPECT_EQ(d->evidence,
            "the sandbox could not be set up (sandbox: landlock_restrict_self: Operation not "
            "permitted)");
  RunResult missing;
  missing.exit_code = 127;
  missing.setup_error = "execve: No such file or directory";
  EXPECT_FALSE(Find(missing));
}

TEST_F(DenialTest, NetworkRefusalIsOnlyLikely) {
  auto d = Find(Exited(2, "ping: socket: Operation not permitted\n"));
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->verified);
  EXPECT_EQ(d->evidence, "a network call failed with EPERM and the network is off");
  policy_.network_access = true;
  EXPECT_FALSE(Find(Exited(2, "ping: socket: Operation not permitted\n")));
}

TEST_F(DenialTest, UnrestrictedIsNeverDenied) {
  policy_.mode = Mode::kDangerFullAccess;
  EXPECT_FALSE(Find(Exited(1, "touch: cannot touch '" + base_ + "/outside/x': Permission denied")));
}

}  // namespace
}  // namespace ae::sandbox
