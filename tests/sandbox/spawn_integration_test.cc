// The sandbox through the spawner the tools use (RunProcess): confinement holds, the failure
// reads as a denial, and a broken step reaches the caller as setup_error. The write watch
// records what the kernel saw the command attempt, resolved as the kernel resolves it, and
// nothing the command only says or the sandbox allows.
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
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
using testing::WorkspaceWriteSettings;

class SpawnIntegration : public testing::WorkspaceWriteTest {
 protected:
  void SetUp() override {
    WorkspaceWriteTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Result<PreparedPtr> prepared = Prepare(policy_);
    ASSERT_TRUE(prepared.ok()) << prepared.message();
    prepared_ = std::move(prepared.value());
  }

  RunResult Run(const std::string& script, bool watch = true) {
    SpawnSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.cwd = base_ + "/ws";
    spec.env = {"PATH=/usr/bin:/bin"};
    spec.sandbox = prepared_.get();
    spec.watch_writes = watch;
    RunLimits limits;
    CancelToken cancel;
    Result<RunResult> ran = RunProcess(spec, limits, cancel);
    EXPECT_TRUE(ran.ok()) << ran.message();
    return ran.ok() ? *ran : RunResult{};
  }

  // The watch's record for `script`: the refused paths, relative to base_ where under it.
  std::vector<std::string> Refused(const std::string& script) {
    RunResult r = Run(script);
    EXPECT_TRUE(r.writes.watched) << r.writes.unavailable;
    std::vector<std::string> out;
    for (const std::string& p : r.writes.refused) {
      out.push_back(p.rfind(base_ + "/", 0) == 0 ? p.substr(base_.size() + 1) : p);
    }
    return out;
  }

  bool Denied(const RunResult& r) const {
    auto d = FindDenial(r, policy_);
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
  EXPECT_FALSE(FindDenial(*ran, policy_).has_value()) << ran->output;
}

// A writable root deleted after the session prepared the sandbox (a command removed an
// --add-dir) must not make every later command fail.
TEST_F(SpawnIntegration, DeletedRootDoesNotBreakLaterCommands) {
  Sh("mkdir extra", base_);
  Settings s = WorkspaceWriteSettings();
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

// The mount holding a carve-out detached during the session (umount -l; dockerd does it when a
// container whose data root lies in a writable root stops): the held inode is out of every
// command's reach, so it is not looked for. Each later command runs, and whatever is at the
// carve-out's path now is read-only as any carve-out that appeared later.
TEST_F(SpawnIntegration, ACarveoutOnADetachedMountDoesNotFailLaterCommands) {
  const std::string vol = base_ + "/ws/vol";
  Sh("mkdir vol", base_ + "/ws");
  if (::mount("tmpfs", vol.c_str(), "tmpfs", 0, "size=4m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  Sh("git init -q repo", vol);
  policy_.read_only_carveouts.push_back(vol + "/repo/.git");  // as the nested scan adds it
  Result<PreparedPtr> prepared = Prepare(policy_);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  prepared_ = std::move(prepared.value());
  RunResult before = Run("echo x > vol/repo/.git/config");
  ASSERT_NE(before.exit_code, 0) << before.output;

  ASSERT_EQ(::umount2(vol.c_str(), MNT_DETACH), 0) << std::strerror(errno);
  for (int i = 0; i < 3; ++i) {
    RunResult after = Run("echo ok > inside && cat inside");
    EXPECT_FALSE(after.setup_error.has_value()) << *after.setup_error;
    EXPECT_EQ(after.exit_code, 0) << after.output;
    EXPECT_EQ(after.output, "ok\n");
  }
  Sh("mkdir -p repo/.git", vol);  // the same path again, on the filesystem below
  RunResult git = Run("echo x > vol/repo/.git/config");
  EXPECT_FALSE(git.setup_error.has_value()) << *git.setup_error;
  EXPECT_NE(git.exit_code, 0) << git.output;
  EXPECT_FALSE(Exists(vol + "/repo/.git/config"));
}

using Paths = std::vector<std::string>;

TEST_F(SpawnIntegration, TheWatchRecordsRefusedWritesAsTheKernelResolvesThem) {
  Sh("mkdir -p ws/a/b outside/d && echo s > outside/secret && ln -s ../outside/secret ws/out-link "
     "&& ln -s a/b ws/deep && ln -s ../outside/d ws/out-dir",
     base_);
  EXPECT_EQ(Refused("touch ../outside/x"), (Paths{"outside/x"}));
  EXPECT_EQ(Refused("echo x > out-link"), (Paths{"outside/secret"}));
  EXPECT_EQ(Refused("mkdir out-dir/n"), (Paths{"outside/d/n"}));
  EXPECT_EQ(Refused("cd ../outside && : > y"), (Paths{"outside/y"}));
  EXPECT_EQ(Refused("mv ../outside/secret stolen"), (Paths{"outside/secret"}));
  EXPECT_EQ(Refused("rm -f ../outside/secret"), (Paths{"outside/secret"}));
  EXPECT_EQ(Refused("echo x > .git/config"), (Paths{"ws/.git/config"}));
  EXPECT_EQ(Refused("chmod 600 ../outside/secret"), (Paths{"outside/secret"}));
  // openat relative to a directory descriptor of the command's.
  EXPECT_EQ(Refused("python3 -c \"import os; d = os.open('../outside', os.O_RDONLY); "
                    "os.open('z', os.O_WRONLY | os.O_CREAT, dir_fd=d)\""),
            (Paths{"outside/z"}));
}

TEST_F(SpawnIntegration, TheWatchRecordsNothingTheSandboxAllows) {
  Sh("mkdir -p ws/a/b && echo s > outside/secret && ln -s ../outside/secret ws/out-link && "
     "ln -s a/b ws/deep && echo m > ws/mode000 && chmod 000 ws/mode000",
     base_);
  for (const char* script : {
           "echo ok > inside; rm inside",                           // the workspace
           "echo x > /dev/null; echo y > /dev/stdout; echo z >&2",  // devices, magic links
           "cat ../outside/secret; cat mode000",                    // reads are not even notified
           "rm out-link",                                     // the link itself, not its target
           "touch deep/../../x",                              // ".." after a symlink: ws/x
           "git init -q fresh && git -C fresh config a.b c",  // a repository the command made
           "python3 -c \"import os\ntry: os.open('out-link', os.O_WRONLY | os.O_NOFOLLOW)\n"
           "except OSError: pass\"",                             // O_NOFOLLOW: ELOOP, not outside
           "ln -s /proc/self/fd/1 selfout && echo x > selfout",  // resolved in the command
       }) {
    EXPECT_EQ(Refused(script), Paths{}) << script;
  }
}

// Reading a mode-000 file fails with "Permission denied" but is no refused write: no evidence.
// (Root reads it anyway, so the read runs as nobody.)
TEST_F(SpawnIntegration, AModeZeroFileIsNotTheSandbox) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the read as another user";
  Sh("echo m > ws/mode000 && chmod 000 ws/mode000 && chmod 755 . ws", base_);
  RunResult r = Run("setpriv --reuid=65534 --regid=65534 --clear-groups cat mode000");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("Permission denied"), std::string::npos) << r.output;
  EXPECT_TRUE(r.writes.refused.empty());
  EXPECT_FALSE(FindDenial(r, policy_).has_value());
}

// Without the watch (switched off here; a kernel before 5.5 has none) nothing is recorded, and
// the result says why: no escalation without evidence.
TEST_F(SpawnIntegration, WithoutTheWatchNothingIsEvidence) {
  PrepareOptions options;
  options.write_watch = false;
  Result<PreparedPtr> prepared = Prepare(policy_, options);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  prepared_ = std::move(prepared.value());
  RunResult r = Run("touch ../outside/x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(r.writes.watched);
  EXPECT_EQ(r.writes.unavailable, "the write watch is switched off");
  EXPECT_FALSE(FindDenial(r, policy_).has_value());
  EXPECT_EQ(UnobservedDenial(r, policy_),
            std::optional<std::string>("the write watch is switched off"));
}

// Only a caller that asks for the watch gets it (the orchestrator under on-failure): the
// command of one that does not carries one seccomp filter fewer, and records nothing.
TEST_F(SpawnIntegration, TheWatchIsInstalledOnlyWhenAskedFor) {
  const std::string script = "sed -n 's/^Seccomp_filters:[[:space:]]*//p' /proc/self/status";
  RunResult plain = Run(script + "; touch ../outside/x", false);
  RunResult watched = Run(script + "; touch ../outside/x", true);
  ASSERT_FALSE(plain.output.empty()) << "no Seccomp_filters line in /proc/self/status";
  const int plain_filters = std::atoi(plain.output.c_str());
  const int watched_filters = std::atoi(watched.output.c_str());
  EXPECT_GE(plain_filters, 1) << plain.output;
  EXPECT_EQ(watched_filters, plain_filters + 1) << plain.output << watched.output;
  EXPECT_FALSE(plain.writes.watched);
  EXPECT_EQ(plain.writes.notifications, 0u);
  EXPECT_TRUE(plain.writes.refused.empty());
  EXPECT_TRUE(watched.writes.watched) << watched.writes.unavailable;
  EXPECT_EQ(watched.writes.refused, (std::vector<std::string>{base_ + "/outside/x"}));
}

// The watch's cost, for the notes: 5,000 files created and removed in the workspace (10,000
// notified calls) with and without it. Printed, not asserted.
TEST_F(SpawnIntegration, WatchCostIsMeasured) {
  const std::string script =
      "python3 -c \"import os\nfor i in range(5000):\n  "
      "fd = os.open('f%d' % i, os.O_WRONLY | os.O_CREAT)\n  os.close(fd)\n  os.unlink('f%d' % i)\"";
  auto t0 = std::chrono::steady_clock::now();
  RunResult watched = Run(script);
  auto t1 = std::chrono::steady_clock::now();
  ASSERT_EQ(watched.exit_code, 0) << watched.output;
  EXPECT_GE(watched.writes.notifications, 10000u);
  PrepareOptions options;
  options.write_watch = false;
  Result<PreparedPtr> prepared = Prepare(policy_, options);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  prepared_ = std::move(prepared.value());
  auto t2 = std::chrono::steady_clock::now();
  RunResult plain = Run(script);
  auto t3 = std::chrono::steady_clock::now();
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.writes.notifications, 0u);
  const double with = std::chrono::duration<double>(t1 - t0).count();
  const double without = std::chrono::duration<double>(t3 - t2).count();
  std::printf("[ measure  ] 10,000 watched calls: %.3f s with the watch, %.3f s without (%.2fx)\n",
              with, without, with / without);
}

}  // namespace
}  // namespace ae::sandbox
