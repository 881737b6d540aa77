#include "sandbox/policy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "sandbox/confined_fs.h"
#include "sandbox/paths.h"
#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::Exists;
using testing::RealPath;
using testing::ScopedEnv;
using testing::ScratchDir;
using testing::Sh;
using testing::WorkspaceWriteSettings;
using testing::WriteText;

TEST(Mode, NamesRoundTrip) {
  for (Mode mode : {Mode::kReadOnly, Mode::kWorkspaceWrite, Mode::kDangerFullAccess}) {
    Result<Mode> parsed = ParseMode(ModeName(mode));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_STREQ(ModeName(Mode::kWorkspaceWrite), "workspace-write");
}

TEST(Mode, RejectsUnknownWithTheChoices) {
  Result<Mode> parsed = ParseMode("read-write");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.message(),
            "invalid sandbox mode 'read-write' (expected read-only, workspace-write or "
            "danger-full-access)");
}

TEST(Paths, Normalize) {
  EXPECT_EQ(NormalizePath("/a//b/./c/../d/"), "/a/b/d");
  EXPECT_EQ(NormalizePath("/../.."), "/");
  EXPECT_EQ(NormalizePath("/"), "/");
}

TEST(Paths, IsUnder) {
  EXPECT_TRUE(IsUnder("/ws", "/ws"));
  EXPECT_TRUE(IsUnder("/ws/a", "/ws"));
  EXPECT_FALSE(IsUnder("/wsx", "/ws"));
  EXPECT_FALSE(IsUnder("/w", "/ws"));
  EXPECT_TRUE(IsUnder("/anything", "/"));
}

TEST(Paths, ResolveFollowsLinksIncludingDanglingOnes) {
  ScratchDir dir;
  const std::string d = RealPath(dir.path());
  Sh("mkdir real && ln -s real link && ln -s /etc/agentexec-nonexistent dangling && "
     "ln -s ../.. up",
     d);
  EXPECT_EQ(ResolvePath(d + "/link/x/y"), d + "/real/x/y");
  EXPECT_EQ(ResolvePath(d + "/dangling"), "/etc/agentexec-nonexistent");
  EXPECT_EQ(ResolvePath(d + "/link/../real"), d + "/real");
  EXPECT_EQ(ResolvePath(d + "/nope/../x"), d + "/x");
}

class PolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = RealPath(dir_.path());
    ws_ = base_ + "/ws";
    Sh("mkdir -p ws/sub outside extra && git init -q ws", base_);
  }
  ScratchDir dir_;
  std::string base_, ws_;
};

TEST_F(PolicyTest, WorkspaceWriteRoots) {
  ScopedEnv tmpdir("TMPDIR", (base_ + "/extra").c_str());
  Settings s;
  s.mode = Mode::kWorkspaceWrite;
  s.writable_roots = {base_ + "/outside", "sub"};  // relative: against the cwd
  s.add_dirs = {base_ + "/extra"};                 // same as $TMPDIR: listed once
  Result<Policy> p = BuildPolicy(s, ws_);
  ASSERT_TRUE(p.ok()) << p.message();
  std::vector<std::string> expected = {ws_, RealPath("/tmp"), base_ + "/extra", base_ + "/outside",
                                       ws_ + "/sub"};
  EXPECT_EQ(p->writable_roots, expected);
  EXPECT_FALSE(p->network_access);
  EXPECT_TRUE(p->warnings.empty());
}

TEST_F(PolicyTest, ExcludesTmpAndTmpdir) {
  ScopedEnv tmpdir("TMPDIR", (base_ + "/extra").c_str());
  Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), ws_);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->writable_roots, std::vector<std::string>{ws_});
}

TEST_F(PolicyTest, MissingRootIsSkippedWithAWarning) {
  Settings s = WorkspaceWriteSettings();
  s.add_dirs = {base_ + "/missing"};
  Result<Policy> p = BuildPolicy(s, ws_);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->writable_roots, std::vector<std::string>{ws_});
  ASSERT_EQ(p->warnings.size(), 1u);
  EXPECT_EQ(p->warnings[0], "sandbox: --add-dir " + base_ +
                                "/missing is not writable in this run: No such file or directory");
}

TEST_F(PolicyTest, NetworkOnlyInWorkspaceWrite) {
  Settings s = WorkspaceWriteSettings();
  s.network_access = true;
  EXPECT_TRUE(BuildPolicy(s, ws_)->network_access);
  s.mode = Mode::kReadOnly;
  EXPECT_FALSE(BuildPolicy(s, ws_)->network_access);
  s.mode = Mode::kDangerFullAccess;
  EXPECT_TRUE(BuildPolicy(s, ws_)->network_access);
}

TEST_F(PolicyTest, BadWorkingDirectory) {
  Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), "relative/dir");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.message(), "sandbox: the working directory must be absolute, got 'relative/dir'");
  p = BuildPolicy(WorkspaceWriteSettings(), base_ + "/missing");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.message(), "sandbox: cannot use working directory " + base_ +
                             "/missing: No such file or directory");
}

TEST_F(PolicyTest, ReadOnlyWritesNothing) {
  Settings s;
  s.mode = Mode::kReadOnly;
  Result<Policy> p = BuildPolicy(s, ws_);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->writable_roots.empty());
  EXPECT_FALSE(p->CanWrite(ws_ + "/a.txt"));
  EXPECT_FALSE(p->CanWrite("/tmp/x"));
}

TEST_F(PolicyTest, DangerFullAccessWritesEverything) {
  Settings s;
  s.mode = Mode::kDangerFullAccess;
  Result<Policy> p = BuildPolicy(s, ws_);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->CanWrite("/etc/passwd"));
  EXPECT_TRUE(p->CanWrite(ws_ + "/.git/config"));
}

TEST_F(PolicyTest, CanWriteInsideButNotCarveOuts) {
  Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), ws_);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->CanWrite(ws_ + "/a.txt"));
  EXPECT_TRUE(p->CanWrite(ws_ + "/new/dir/file"));
  EXPECT_TRUE(p->CanWrite(ws_ + "/.gitignore"));
  EXPECT_TRUE(p->CanWrite(ws_ + "/.github/workflows/ci.yml"));
  EXPECT_FALSE(p->CanWrite(ws_ + "/.git"));
  EXPECT_FALSE(p->CanWrite(ws_ + "/.git/config"));
  EXPECT_FALSE(p->CanWrite(ws_ + "/.git/hooks/pre-commit"));
  EXPECT_FALSE(p->CanWrite(ws_ + "/.agentexec/config.toml"));  // does not exist: still refused
  EXPECT_FALSE(p->CanWrite(ws_ + "/sub/../.git/config"));
  EXPECT_FALSE(p->CanWrite(ws_ + "/../outside/x"));
  EXPECT_FALSE(p->CanWrite(base_ + "/outside/x"));
  EXPECT_FALSE(p->CanWrite("relative.txt"));
  EXPECT_FALSE(p->CanWrite(""));
}

TEST_F(PolicyTest, SymlinksCannotLeadOut) {
  Sh("ln -s ../outside ws/out && ln -s ../outside/new ws/dangling && ln -s .git ws/g && "
     "ln -s /etc ws/etc",
     base_);
  Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), ws_);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->CanWrite(ws_ + "/out/x"));
  EXPECT_FALSE(p->CanWrite(ws_ + "/dangling"));
  EXPECT_FALSE(p->CanWrite(ws_ + "/g/config"));
  EXPECT_FALSE(p->CanWrite(ws_ + "/etc/passwd"));
}

TEST_F(PolicyTest, AliasOfTheWorkspaceIsStillTheWorkspace) {
  Sh("ln -s ws alias", base_);
  Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), base_ + "/alias");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->writable_roots, std::vector<std::string>{ws_});
  EXPECT_TRUE(p->CanWrite(base_ + "/alias/a.txt"));
  EXPECT_FALSE(p->CanWrite(base_ + "/alias/.git/config"));
}

TEST_F(PolicyTest, LinkedWorktreeProtectsItsGitDirs) {
  Sh("git -C ws -c user.email=t@t -c user.name=t commit -q --allow-empty -m init && "
     "git -C ws worktree add -q ../wt",
     base_);
  ASSERT_TRUE(Exists(base_ + "/wt/.git"));
  Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), base_ + "/wt");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->CanWrite(base_ + "/wt/file"));
  EXPECT_FALSE(p->CanWrite(base_ + "/wt/.git"));
  const auto& c = p->read_only_carveouts;
  EXPECT_NE(std::find(c.begin(), c.end(), ws_ + "/.git/worktrees/wt"), c.end());
  EXPECT_NE(std::find(c.begin(), c.end(), ws_ + "/.git"), c.end());
}

TEST_F(PolicyTest, SeparateGitDirInsideTheWorkspaceIsProtected) {
  // sep/.git is a file "gitdir: <ws>/store"; the store sits in a writable root under
  // another name and must be protected all the same.
  Sh("mkdir sep && git init -q --separate-git-dir=" + ws_ + "/store sep", ws_);
  Settings s = WorkspaceWriteSettings();
  s.add_dirs = {ws_};
  Result<Policy> p = BuildPolicy(s, ws_ + "/sep");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->CanWrite(ws_ + "/store/config"));
  EXPECT_TRUE(p->CanWrite(ws_ + "/sep/file"));
  EXPECT_TRUE(p->CanWrite(ws_ + "/storefront"));
}

// agentexec's home (and codex's) hold the config.toml that names what the next run starts
// outside the sandbox: inside a writable root, under any name, they are carve-outs.
TEST_F(PolicyTest, HomesInsideARootAreReadOnlyWhateverTheirName) {
  Sh("mkdir -p ci-cache/agentexec && touch ci-cache/agentexec/config.toml", ws_);
  Settings s = WorkspaceWriteSettings();
  s.read_only_dirs = {ws_ + "/ci-cache/agentexec", ws_ + "/ci-cache/codex", base_ + "/outside"};
  Result<Policy> p = BuildPolicy(s, ws_);
  ASSERT_TRUE(p.ok()) << p.message();
  auto listed = [&](const std::string& path) {
    return std::find(p->read_only_carveouts.begin(), p->read_only_carveouts.end(), path) !=
           p->read_only_carveouts.end();
  };
  EXPECT_TRUE(listed(ws_ + "/ci-cache/agentexec"));
  EXPECT_TRUE(listed(ws_ + "/ci-cache/codex"));  // not there yet: listed all the same
  EXPECT_FALSE(listed(base_ + "/outside"));      // outside every root: read-only anyway
  EXPECT_FALSE(p->CanWrite(ws_ + "/ci-cache/agentexec/config.toml"));
  EXPECT_FALSE(p->CanWrite(ws_ + "/ci-cache/codex/config.toml"));
  EXPECT_TRUE(p->CanWrite(ws_ + "/ci-cache/other"));
  std::string resolved;
  EXPECT_EQ(ConfinedFs(*p).Target(ws_ + "/ci-cache/agentexec/config.toml", &resolved), EROFS);
}

TEST_F(PolicyTest, AHomeReachedThroughASymlinkIsReadOnlyWhereItLands) {
  Sh("mkdir -p cache/home && ln -s " + ws_ + "/cache/home " + base_ + "/home-link", ws_);
  Settings s = WorkspaceWriteSettings();
  s.read_only_dirs = {base_ + "/home-link"};
  Result<Policy> p = BuildPolicy(s, ws_);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_FALSE(p->CanWrite(ws_ + "/cache/home/config.toml"));
  EXPECT_TRUE(p->CanWrite(ws_ + "/cache/other"));
}

TEST_F(PolicyTest, AHomeThatIsTheWorkspaceStaysWritable) {
  // The user runs in the home itself (or a root holds it): they gave it as writable.
  Settings s = WorkspaceWriteSettings();
  s.read_only_dirs = {ws_, base_};
  Result<Policy> p = BuildPolicy(s, ws_);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_TRUE(p->CanWrite(ws_ + "/a.txt"));
}

}  // namespace
}  // namespace ae::sandbox
