// The library path the tools use: Prepare in the parent, ApplyInChild after fork.
#include "sandbox/prepared.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sandbox/landlock.h"
#include "sandbox/preflight.h"
#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::Exists;
using testing::PreflightFaking;
using testing::ScratchDir;
using testing::Sh;
using testing::WorkspaceWriteSettings;

// Forks, applies `prepared`, then tries to create `path`; returns the child's errno (0 when
// the file was created), or 200 when ApplyInChild itself failed (its step on stderr).
int CreateInChild(const PreparedSandbox& prepared, const std::string& path) {
  pid_t pid = ::fork();
  if (pid == 0) {
    const char* step = "";
    int err = 0;
    if (!ApplyInChild(prepared, &step, &err)) {
      std::fprintf(stderr, "ApplyInChild: %s: %s\n", step, std::strerror(err));
      ::_exit(200);
    }
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
  Result<PreflightReport> report = PreflightFaking("AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK", policy_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.message(),
            "sandbox: cannot enforce workspace-write: Landlock is not supported by this kernel "
            "(landlock_create_ruleset: Function not implemented). Run with -s "
            "danger-full-access where the container is the boundary, or enable Landlock "
            "(CONFIG_SECURITY_LANDLOCK, lsm=landlock).");
}

TEST_F(PreparedTest, PreflightWarnsWithoutNamespaces) {
  Result<PreflightReport> report = PreflightFaking("AGENTEXEC_SANDBOX_FAKE_NO_USERNS", policy_);
  ASSERT_TRUE(report.ok()) << report.message();
  EXPECT_FALSE(report->mount_namespace);
  ASSERT_FALSE(report->warnings.empty());
  EXPECT_EQ(report->warnings[0],
            "sandbox: .git, .agentexec, .codex and protected_paths are writable in this run: "
            "could not create a mount namespace (unshare: Operation not permitted)");
  EXPECT_FALSE(report->pid_namespace);
  // Every user is told the process tree is not contained, root or not.
  EXPECT_EQ(report->warnings.back(),
            "sandbox: processes a command leaves running (setsid, daemons) can outlive it in "
            "this run: could not create a PID namespace (unshare: Operation not permitted)");
  EXPECT_EQ(report->degradations.size(), report->warnings.size());
  Result<PreparedPtr> prepared = Prepare(policy_, *report);  // Prepare follows the preflight
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(DescribePrepared(**prepared).find("mount"), std::string::npos);
}

// Carve-outs are held by identity: a command that renames a repository's parent directory
// (only `.git` itself is a mount point in its namespace) finds `.git` read-only under the new
// name in its next command.
class HeldCarveoutTest : public testing::WorkspaceWriteTest {
 protected:
  void SetUp() override {
    testing::WorkspaceWriteTest::SetUp();
    if (::testing::Test::IsSkipped()) return;
    Result<PreflightReport> report = Preflight(policy_);
    ASSERT_TRUE(report.ok()) << report.message();
    if (!report->mount_namespace) GTEST_SKIP() << "no mount namespace here";
  }
  // The policy and prepared sandbox for the workspace as it is now (the nested scan runs).
  PreparedPtr PrepareNow() {
    Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), base_ + "/ws");
    EXPECT_TRUE(p.ok()) << p.message();
    policy_ = *p;
    Result<PreparedPtr> prepared = Prepare(policy_);
    EXPECT_TRUE(prepared.ok()) << prepared.message();
    return prepared.ok() ? std::move(prepared.value()) : nullptr;
  }
};

TEST_F(HeldCarveoutTest, ANestedGitStaysReadOnlyUnderItsNewName) {
  Sh("mkdir vendor && git init -q vendor/lib", base_ + "/ws");
  PreparedPtr prepared = PrepareNow();
  ASSERT_NE(prepared, nullptr);
  Sh("mv vendor/lib vendor/lib2", base_ + "/ws");
  EXPECT_EQ(CreateInChild(*prepared, base_ + "/ws/vendor/lib2/.git/hooks/pre-commit"), EROFS);
  EXPECT_FALSE(Exists(base_ + "/ws/vendor/lib2/.git/hooks/pre-commit"));
  // Moved twice, and something else put at the old path: both are read-only.
  Sh("mkdir -p deeper && mv vendor/lib2 deeper/lib3 && mkdir -p vendor/lib/.git", base_ + "/ws");
  EXPECT_EQ(CreateInChild(*prepared, base_ + "/ws/deeper/lib3/.git/config.new"), EROFS);
  EXPECT_EQ(CreateInChild(*prepared, base_ + "/ws/vendor/lib/.git/config"), EROFS);
  EXPECT_EQ(CreateInChild(*prepared, base_ + "/ws/deeper/lib3/file"), 0);
}

TEST_F(HeldCarveoutTest, ARemovedCarveoutIsSkipped) {
  Sh("mkdir -p gone/.git", base_ + "/ws");
  PreparedPtr prepared = PrepareNow();
  ASSERT_NE(prepared, nullptr);
  Sh("rmdir gone/.git", base_ + "/ws");
  EXPECT_EQ(CreateInChild(*prepared, base_ + "/ws/gone/file"), 0);
  EXPECT_EQ(CreateInChild(*prepared, base_ + "/ws/.git/evil"), EROFS);
}

TEST_F(HeldCarveoutTest, AGitfileStaysReadOnlyUnderItsNewName) {
  Sh("mkdir -p sub/mod && echo 'gitdir: ../../store' > sub/mod/.git && mkdir store", base_ + "/ws");
  PreparedPtr prepared = PrepareNow();
  ASSERT_NE(prepared, nullptr);
  Sh("mv sub sub2", base_ + "/ws");
  pid_t pid = ::fork();
  if (pid == 0) {
    const char* step = "";
    int err = 0;
    if (!ApplyInChild(*prepared, &step, &err)) ::_exit(200);
    int fd = ::open((base_ + "/ws/sub2/mod/.git").c_str(), O_WRONLY | O_TRUNC);
    ::_exit(fd >= 0 ? 0 : errno);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), EROFS);
}

// Under chroot(2) the /proc/self/fd links of held descriptors name paths from the real root,
// above ours: the carve-out is found all the same.
TEST_F(HeldCarveoutTest, ARenamedGitIsFoundUnderChroot) {
  if (::geteuid() != 0) GTEST_SKIP() << "chroot needs root";
  Sh("mkdir vendor && git init -q vendor/lib && mkdir ../proc ../dev", base_ + "/ws");
  const std::string base = base_;
  pid_t pid = ::fork();
  if (pid == 0) {
    // A mount namespace of the test's own, so the binds vanish with it.
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      ::_exit(101);
    }
    // The new root is a mount point, as the sandbox needs ("make / private").
    if (::mount(base.c_str(), base.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        ::mount("/proc", (base + "/proc").c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        ::mount("/dev", (base + "/dev").c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      ::_exit(102);
    }
    if (::chroot(base.c_str()) != 0 || ::chdir("/ws") != 0) ::_exit(103);
    Result<Policy> policy = BuildPolicy(WorkspaceWriteSettings(), "/ws");
    if (!policy.ok()) ::_exit(104);
    PrepareOptions options;
    options.pid_namespace = false;
    Result<PreparedPtr> prepared = Prepare(*policy, options);
    if (!prepared.ok()) ::_exit(105);
    if (::rename("/ws/vendor/lib", "/ws/vendor/lib2") != 0) ::_exit(106);
    ::_exit(CreateInChild(**prepared, "/ws/vendor/lib2/.git/evil"));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), EROFS);
  EXPECT_FALSE(Exists(base_ + "/ws/vendor/lib2/.git/evil"));
}

}  // namespace
}  // namespace ae::sandbox
