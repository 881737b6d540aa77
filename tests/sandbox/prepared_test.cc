// The library path the tools use: Prepare in the parent, ApplyInChild after fork.
#include "sandbox/prepared.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "sandbox/landlock.h"
#include "sandbox/preflight.h"
#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::Exists;
using testing::ScratchDir;
using testing::Sh;

// Forks, applies `prepared`, then tries to create `path`; returns the child's errno (0 when
// the file was created), or -1000 - errno when ApplyInChild itself failed.
int CreateInChild(const PreparedSandbox& prepared, const std::string& path) {
  pid_t pid = ::fork();
  if (pid == 0) {
    const char* step = "";
    int err = 0;
    if (!ApplyInChild(prepared, &step, &err)) ::_exit(200);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    ::_exit(fd >= 0 ? 0 : errno);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Landlock, HandledRightsFollowTheAbi) {
  EXPECT_EQ(landlock::HandledFsRights(1), (1ULL << 13) - 1);
  EXPECT_EQ(landlock::HandledFsRights(2), (1ULL << 14) - 1);  // + REFER
  EXPECT_EQ(landlock::HandledFsRights(3), (1ULL << 15) - 1);  // + TRUNCATE
  EXPECT_EQ(landlock::HandledFsRights(4), (1ULL << 15) - 1);  // network only
  EXPECT_EQ(landlock::HandledFsRights(7), (1ULL << 16) - 1);  // + IOCTL_DEV
}

class PreparedTest : public testing::WorkspaceWriteTest {};

TEST_F(PreparedTest, LandlockAndSeccompAloneConfineWrites) {
  PrepareOptions options;
  options.mount_namespace = false;
  Result<PreparedPtr> prepared = Prepare(policy_, options);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  EXPECT_EQ(DescribePrepared(**prepared),
            "landlock abi " + std::to_string(landlock::Abi()) + " + seccomp");
  EXPECT_EQ(CreateInChild(**prepared, base_ + "/ws/inside"), 0);
  EXPECT_TRUE(Exists(base_ + "/ws/inside"));
  EXPECT_EQ(CreateInChild(**prepared, base_ + "/outside/x"), EACCES);
  EXPECT_FALSE(Exists(base_ + "/outside/x"));
}

TEST_F(PreparedTest, MountNamespaceMakesGitReadOnly) {
  Result<PreflightReport> report = Preflight(policy_);
  ASSERT_TRUE(report.ok()) << report.message();
  if (!report->mount_namespace) GTEST_SKIP() << "no mount namespace here";
  PrepareOptions options;
  options.mount_namespace = true;
  Result<PreparedPtr> prepared = Prepare(policy_, options);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  EXPECT_EQ(CreateInChild(**prepared, base_ + "/ws/.git/evil"), EROFS);
  EXPECT_EQ(CreateInChild(**prepared, base_ + "/outside/x"), EROFS);
  EXPECT_EQ(CreateInChild(**prepared, base_ + "/ws/inside"), 0);
  EXPECT_FALSE(Exists(base_ + "/ws/.git/evil"));
}

TEST_F(PreparedTest, DangerFullAccessAppliesNothing) {
  Policy open = policy_;
  open.mode = Mode::kDangerFullAccess;
  Result<PreparedPtr> prepared = Prepare(open);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(DescribePrepared(**prepared), "none");
  EXPECT_EQ(CreateInChild(**prepared, base_ + "/outside/x"), 0);
}

TEST_F(PreparedTest, PreflightDescribesTheLayers) {
  Result<PreflightReport> report = Preflight(policy_);
  ASSERT_TRUE(report.ok()) << report.message();
  EXPECT_EQ(report->landlock_abi, landlock::Abi());
  std::string expected = "landlock abi " + std::to_string(landlock::Abi()) + " + seccomp";
  if (report->mount_namespace) expected += " + mount namespace";
  if (report->pid_namespace) expected += " + pid namespace";
  EXPECT_EQ(report->description, expected);
}

TEST_F(PreparedTest, PreflightFailsClosedWithoutLandlock) {
  ::setenv("AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK", "1", 1);
  Result<PreflightReport> report = Preflight(policy_);
  ::unsetenv("AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK");
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.message(),
            "sandbox: cannot enforce workspace-write: Landlock is not supported by this kernel "
            "(landlock_create_ruleset: Function not implemented). Run with -s "
            "danger-full-access where the container is the boundary, or enable Landlock "
            "(CONFIG_SECURITY_LANDLOCK, lsm=landlock).");
}

TEST_F(PreparedTest, PreflightWarnsWithoutNamespaces) {
  ::setenv("AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1", 1);
  Result<PreflightReport> report = Preflight(policy_);
  ::unsetenv("AGENTEXEC_SANDBOX_FAKE_NO_USERNS");
  ASSERT_TRUE(report.ok()) << report.message();
  EXPECT_FALSE(report->mount_namespace);
  ASSERT_FALSE(report->warnings.empty());
  EXPECT_EQ(report->warnings[0],
            "sandbox: .git and .agentexec are writable in this run: could not create a mount "
            "namespace (unshare: Operation not permitted)");
  EXPECT_FALSE(report->pid_namespace);
  // Every user is told the process tree is not contained, root or not.
  EXPECT_EQ(report->warnings.back(),
            "sandbox: processes a command leaves running (setsid, daemons) can outlive it in "
            "this run: could not create a PID namespace (unshare: Operation not permitted)");
  EXPECT_EQ(report->degradations.size(), report->warnings.size());
  EXPECT_FALSE(UsableIsolation(policy_).mount_namespace);  // Prepare follows the preflight
  Result<PreparedPtr> prepared = Prepare(policy_);
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(DescribePrepared(**prepared).find("mount"), std::string::npos);
  ForgetMountNamespaceFinding();  // later tests in this process see the real kernel
}

}  // namespace
}  // namespace ae::sandbox
