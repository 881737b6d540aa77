// FindDenial: only what agentexec saw itself counts: the write watch's record of refused
// attempts (write_watch_test.cc shows the record is the kernel's), re-checked against the real
// file system; wording alone, paths named in the output, SIGSYS, exit 0 are no evidence.
#include "sandbox/denial.h"

#include <gtest/gtest.h>

#include <csignal>

#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::CarvedOutPolicy;
using testing::RealPath;
using testing::ScratchDir;
using testing::Sh;

RunResult Exited(int code, std::string output, std::vector<std::string> refused = {}) {
  RunResult r;
  r.exit_code = code;
  r.output = std::move(output);
  r.writes.watched = true;
  r.writes.refused_total = refused.size();
  r.writes.refused = std::move(refused);
  return r;
}

// A run that never started its command: `error` is what the child said of the step that
// failed.
RunResult SetupFailed(int code, std::string error) {
  RunResult r;
  r.exit_code = code;
  r.setup_error = std::move(error);
  return r;
}

class DenialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = RealPath(dir_.path());
    Sh("mkdir -p ws/.git/hooks outside", base_);
    policy_ = CarvedOutPolicy(ws());
  }
  std::string ws() const { return base_ + "/ws"; }
  std::string out(const std::string& name) const { return base_ + "/outside/" + name; }
  std::optional<Denial> Find(const RunResult& r) const { return FindDenial(r, policy_); }

  ScratchDir dir_;
  std::string base_;
  Policy policy_;
};

TEST_F(DenialTest, WordingAndNamedPathsAreNoEvidence) {
  EXPECT_FALSE(Find(Exited(1, "Permission denied\n")));
  EXPECT_FALSE(Find(Exited(2, "error: Operation not permitted\nRead-only file system\n")));
  // The old heuristic's evidence: a protected path agentexec can write, named next to the
  // wording. Without a refused attempt the watch saw, it is only text.
  EXPECT_FALSE(Find(Exited(1, "touch: cannot touch '" + out("x") + "': Permission denied\n")));
  EXPECT_FALSE(
      Find(Exited(1, "sh: 1: cannot create .git/hooks/pre-commit: Read-only file system")));
}

TEST_F(DenialTest, ARefusedAttemptWithTheWordingIsEvidence) {
  auto d = Find(Exited(1, "touch: cannot touch 'x': Read-only file system\n", {out("x")}));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->verified);
  EXPECT_EQ(d->evidence, "its write to " + out("x") +
                             " was refused (outside the writable roots) and is allowed outside "
                             "the sandbox");
  RunResult two = Exited(1, "PermissionError: [Errno 13] Permission denied\n",
                         {ws() + "/.git/hooks/pre-commit", out("y")});
  d = Find(two);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->evidence, "its write to " + ws() +
                             "/.git/hooks/pre-commit was refused (a read-only .git or .agentexec) "
                             "and is allowed outside the sandbox; 2 paths refused in all");
}

TEST_F(DenialTest, ARefusedAttemptWithoutTheWordingIsOnlyLikely) {
  // A tool that failed to write its cache outside, then a test that failed on its own.
  auto d = Find(Exited(1, "FAILED test_x - assert 1 == 2\n", {out("cache")}));
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->verified);
}

TEST_F(DenialTest, SigsysSuccessAndTimeoutsAreNoEvidence) {
  RunResult sigsys;
  sigsys.exit_code = 128 + SIGSYS;
  sigsys.term_signal = SIGSYS;
  EXPECT_FALSE(Find(sigsys));
  EXPECT_FALSE(Find(Exited(0, "Read-only file system", {out("x")})));
  RunResult timed_out = Exited(124, "Permission denied", {out("x")});
  timed_out.timed_out = true;
  EXPECT_FALSE(Find(timed_out));
}

TEST_F(DenialTest, APathAgentexecCannotWriteEitherIsNotTheSandbox) {
  // sysctl files are read-only even for root: the sandbox is not what refused the write.
  EXPECT_FALSE(Find(Exited(1, "Permission denied\n", {"/proc/sys/kernel/ostype"})));
}

TEST_F(DenialTest, SetupFailureOfTheSandboxIsEvidenceExecFailureIsNot) {
  auto d = Find(SetupFailed(126, "sandbox: landlock_restrict_self: Operation not permitted"));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->verified);
  EXPECT_EQ(d->evidence,
            "the sandbox could not be set up (sandbox: landlock_restrict_self: Operation not "
            "permitted)");
  EXPECT_FALSE(Find(SetupFailed(127, "execve: No such file or directory")));
}

// A carve-out lies in a writable root: a command can make its step fail (keep renaming the
// repository's parent), and a rerun outside the sandbox would hand it the carve-out.
TEST_F(DenialTest, ACarveoutStepFailureIsOnlyLikely) {
  auto d = Find(SetupFailed(
      126, "sandbox: make read-only /ws/vendor/lib/.git: Resource temporarily unavailable"));
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->verified);
  EXPECT_EQ(d->evidence,
            "the sandbox could not keep a protected path read-only (sandbox: make read-only "
            "/ws/vendor/lib/.git: Resource temporarily unavailable)");
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
  EXPECT_FALSE(Find(Exited(1, "Permission denied", {out("x")})));
}

TEST_F(DenialTest, WithoutTheWatchAFailureIsUnobservedNotDenied) {
  RunResult r = Exited(1, "touch: cannot touch '" + out("x") + "': Permission denied\n");
  r.writes.watched = false;
  r.writes.unavailable = "Linux 5.4 cannot let a notified call continue (needs 5.5)";
  EXPECT_FALSE(Find(r));
  EXPECT_EQ(
      UnobservedDenial(r, policy_),
      std::optional<std::string>("Linux 5.4 cannot let a notified call continue (needs 5.5)"));
  r.writes.watched = true;
  EXPECT_EQ(UnobservedDenial(r, policy_), std::nullopt);
  r.writes.watched = false;
  r.output = "FAILED\n";  // no denial wording: nothing to explain
  EXPECT_EQ(UnobservedDenial(r, policy_), std::nullopt);
}

// AdvisoryDenial: without the watch (approval never), the note's evidence from the output.
class AdvisoryDenialTest : public DenialTest {
 protected:
  static RunResult Unwatched(int code, std::string output) {
    RunResult r = Exited(code, std::move(output));
    r.writes.watched = false;
    return r;
  }
  std::optional<Denial> Advise(const RunResult& r) const {
    return AdvisoryDenial(r, policy_, ws());
  }
};

TEST_F(AdvisoryDenialTest, APathTheSandboxRefusesNamedWithTheWordingIsLikely) {
  auto d = Advise(Unwatched(1, "touch: cannot touch '" + out("x") + "': Permission denied\n"));
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->verified);
  EXPECT_FALSE(d->only_wording);
  EXPECT_EQ(d->evidence, "its output names " + out("x") +
                             " with a permission error: a write there is refused (outside the "
                             "writable roots) and allowed outside the sandbox");
  // Relative to the command's directory, unquoted, after an apostrophe, in curly quotes.
  d = Advise(Unwatched(1, "sh: 1: cannot create .git/hooks/pre-commit: Read-only file system"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->evidence, "its output names " + ws() +
                             "/.git/hooks/pre-commit with a permission error: a write there is "
                             "refused (a read-only .git or .agentexec) and allowed outside the "
                             "sandbox");
  d = Advise(Unwatched(1, "error: can't open '../outside/y': Permission denied\n"));
  ASSERT_TRUE(d);
  EXPECT_NE(d->evidence.find(out("y")), std::string::npos) << d->evidence;
  d = Advise(Unwatched(1, "mkdir: cannot create directory \xe2\x80\x98" + out("d") +
                              "\xe2\x80\x99: Permission denied"));
  ASSERT_TRUE(d);
  EXPECT_NE(d->evidence.find(out("d")), std::string::npos) << d->evidence;
}

TEST_F(AdvisoryDenialTest, APathTheSandboxAllowsOrNobodyCouldWriteExplainsTheFailure) {
  // A mode-000 file in the workspace, a sysctl file: not the sandbox's doing.
  EXPECT_FALSE(Advise(Unwatched(1, "cat: ./secret.txt: Permission denied\n")));
  EXPECT_FALSE(Advise(Unwatched(1, "sh: /proc/sys/kernel/ostype: Permission denied\n")));
  EXPECT_FALSE(Advise(Unwatched(1, "bash: " + ws() + "/run.sh: Permission denied\n")));
}

TEST_F(AdvisoryDenialTest, TheWordingAloneIsOnlyAPossibility) {
  auto d = Advise(Unwatched(1, "PermissionError: [Errno 13] Permission denied\n"));
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->verified);
  EXPECT_TRUE(d->only_wording);
  EXPECT_EQ(d->evidence, "it failed with a permission error and names no path to check");
}

// The output is the command's: a megabyte of unclosed quotes or of quoted words is read once,
// and only so many paths from it are checked.
TEST_F(AdvisoryDenialTest, HostileOutputIsReadOnce) {
  auto d = Advise(Unwatched(1, "Permission denied " + std::string(1 << 20, '`')));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->only_wording);
  // The first 32 name the workspace (not the sandbox's doing); the one outside after them is
  // never looked at.
  std::string many = "Permission denied:";
  for (int i = 0; i < 100000; ++i) many += " 'a/" + std::to_string(i) + "'";
  EXPECT_FALSE(Advise(Unwatched(1, many + " '" + out("x") + "'")));
  EXPECT_TRUE(Advise(Unwatched(1, "Permission denied: '" + out("x") + "'")));
}

TEST_F(AdvisoryDenialTest, NothingWithoutAFailureTheWordingOrWithTheWatch) {
  const std::string named = "touch: cannot touch '" + out("x") + "': Permission denied\n";
  EXPECT_FALSE(Advise(Unwatched(0, named)));
  EXPECT_FALSE(Advise(Unwatched(1, "FAILED " + out("x") + "\n")));
  RunResult timed_out = Unwatched(124, named);
  timed_out.timed_out = true;
  EXPECT_FALSE(Advise(timed_out));
  RunResult exec = Unwatched(126, "execve: Permission denied\n");
  exec.setup_error = "execve: Permission denied";
  EXPECT_FALSE(Advise(exec));
  // The watch ran and saw no refusal: its silence is the answer (FindDenial's).
  EXPECT_FALSE(Advise(Exited(1, named)));
  policy_.mode = Mode::kDangerFullAccess;
  EXPECT_FALSE(Advise(Unwatched(1, named)));
}

}  // namespace
}  // namespace ae::sandbox
