// The sandbox through the spawner the tools use (RunProcess): confinement holds, the failure
// reads as a denial, and a broken step reaches the caller as setup_error.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/cancel.h"
#include "sandbox/denial.h"
#include "sandbox/landlock.h"
#include "sandbox/prepared.h"
#include "sandbox/spawn.h"
#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::Exists;
using testing::ScratchDir;
using testing::Sh;

class SpawnIntegration : public testing::WorkspaceWriteTest {
 protected:
  void SetUp() override {
    WorkspaceWriteTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Result<PreparedPtr> prepared = Prepare(policy_);
    ASSERT_TRUE(prepared.ok()) << prepared.message();
    prepared_ = std::move(prepared.value());
  }

  RunResult Run(const std::string& script) {
    SpawnSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.cwd = base_ + "/ws";
    spec.env = {"PATH=/usr/bin:/bin"};
    spec.sandbox = prepared_.get();
    RunLimits limits;
    CancelToken cancel;
    Result<RunResult> ran = RunProcess(spec, limits, cancel);
    EXPECT_TRUE(ran.ok()) << ran.message();
    return ran.ok() ? *ran : RunResult{};
  }

  bool Denied(const RunResult& r) const {
    auto d = FindDenial(r, policy_, base_ + "/ws");
    return d.has_value() && d->verified;
  }

  PreparedPtr prepared_;
};

TEST_F(SpawnIntegration, ConfinedCommandsAreDeniedAndSaySo) {
  RunResult inside = Run("echo ok > inside && cat inside");
  EXPECT_EQ(inside.exit_code, 0) << inside.output;
  EXPECT_EQ(inside.output, "ok\n");
  EXPECT_FALSE(Denied(inside));

  RunResult outside = Run("echo x > ../outside/x");
  EXPECT_NE(outside.exit_code, 0);
  EXPECT_FALSE(Exists(base_ + "/outside/x"));
  EXPECT_TRUE(Denied(outside)) << outside.output;

  RunResult git = Run("echo x > .git/hooks/pre-commit");
  EXPECT_NE(git.exit_code, 0);
  EXPECT_FALSE(Exists(base_ + "/ws/.git/hooks/pre-commit"));
}

// A missing command is an ordinary failure, not something to retry outside the sandbox.
TEST_F(SpawnIntegration, MissingCommandIsNotADenial) {
  SpawnSpec spec;
  spec.argv = {"agentexec-no-such-command"};
  spec.cwd = base_ + "/ws";
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.sandbox = prepared_.get();
  CancelToken cancel;
  Result<RunResult> ran = RunProcess(spec, RunLimits{}, cancel);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(ran->exit_code, 127);
  EXPECT_FALSE(FindDenial(*ran, policy_, base_ + "/ws").has_value()) << ran->output;
}

// A writable root deleted after the session prepared the sandbox (a command removed an
// --add-dir) must not make every later command fail.
TEST_F(SpawnIntegration, DeletedRootDoesNotBreakLaterCommands) {
  Sh("mkdir extra", base_);
  Settings s;
  s.mode = Mode::kWorkspaceWrite;
  s.exclude_slash_tmp = true;
  s.exclude_tmpdir_env_var = true;
  s.add_dirs = {base_ + "/extra"};
  Result<Policy> p = BuildPolicy(s, base_ + "/ws");
  ASSERT_TRUE(p.ok());
  Result<PreparedPtr> prepared = Prepare(*p);
  ASSERT_TRUE(prepared.ok());
  prepared_ = std::move(prepared.value());
  Sh("rmdir extra", base_);
  RunResult ran = Run("echo ok > inside && echo ok");
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_FALSE(ran.setup_error.has_value()) << *ran.setup_error;
  EXPECT_EQ(ran.output, "ok\n");
}

}  // namespace
}  // namespace ae::sandbox
