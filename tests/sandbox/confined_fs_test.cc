// ConfinedFs against the real kernel: every refusal with its exact errno (policy, symlinks,
// `..`, carve-outs at any depth, special files, mount points), and the writes themselves.
#include "sandbox/confined_fs.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>

#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::CarvedOutPolicy;
using testing::Exists;
using testing::ReadText;
using testing::RealPath;
using testing::ScratchDir;
using testing::Sh;
using testing::WorkspaceWriteSettings;
using testing::WriteText;

class ConfinedFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ConfinedFs::Openat2Available()) GTEST_SKIP() << "openat2 is not available (Linux < 5.6)";
    base_ = RealPath(dir_.path());
    Sh("mkdir -p ws/.git/hooks ws/real ws/sub/.git outside", base_);
    policy_ = CarvedOutPolicy(ws());
  }
  std::string ws() const { return base_ + "/ws"; }
  int Target(const std::string& p) const {
    std::string resolved;
    return ConfinedFs(policy_).Target(p, &resolved);
  }
  int Parent(const std::string& p, Location* at = nullptr) const {
    Location local;
    return ConfinedFs(policy_).OpenParent(p, at ? at : &local, nullptr);
  }

  ScratchDir dir_;
  std::string base_;
  Policy policy_;
};

TEST_F(ConfinedFsTest, PolicyRefusalsHaveTheErrnoACommandWouldSee) {
  EXPECT_EQ(Target(ws() + "/a.txt"), 0);
  EXPECT_EQ(Target(ws() + "/new/dir/a.txt"), 0);
  EXPECT_EQ(Target(base_ + "/outside/x"), EACCES);
  EXPECT_EQ(Target(ws() + "/../outside/x"), EACCES);  // `..` is resolved before the check
  EXPECT_EQ(Target(ws() + "/.git/hooks/pre-commit"), EROFS);
  EXPECT_EQ(Target(ws() + "/sub/.git/hooks/pre-commit"), EROFS);  // a nested repository
  EXPECT_EQ(Target(ws() + "/a/b/.agentexec/config.toml"), EROFS);
  EXPECT_EQ(Target(ws() + "/.gitignore"), 0);
  EXPECT_EQ(Target("relative"), EINVAL);
  policy_.mode = Mode::kReadOnly;
  EXPECT_EQ(Target(ws() + "/a.txt"), EACCES);
}

// A command renames the parent of a protected directory (a nested repository, agentexec's
// home in a CI cache) between calls: apply_patch must not write it under the new name.
TEST_F(ConfinedFsTest, ACarveoutRenamedAwayIsStillReadOnly) {
  Sh("mkdir -p ws/vendor/lib/.git/hooks ws/cache/agentexec", base_);
  Settings settings = WorkspaceWriteSettings();
  settings.read_only_dirs = {ws() + "/cache/agentexec"};
  Result<Policy> built = BuildPolicy(settings, ws());
  ASSERT_TRUE(built.ok()) << built.message();
  policy_ = std::move(*built);
  Sh("mv ws/vendor/lib ws/vendor/lib2 && mv ws/cache ws/cache2", base_);
  EXPECT_EQ(Parent(ws() + "/vendor/lib2/.git/hooks/pre-commit"), EROFS);
  EXPECT_EQ(Parent(ws() + "/cache2/agentexec/config.toml"), EROFS);
  // The renamed parents themselves stay writable, as they are to commands.
  EXPECT_EQ(Parent(ws() + "/vendor/lib2/README"), 0);
  EXPECT_EQ(Parent(ws() + "/cache2/notes.txt"), 0);
}

TEST_F(ConfinedFsTest, SymlinksAreFollowedWhenCheckedAndRefusedWhenOpened) {
  ASSERT_EQ(::symlink((base_ + "/outside").c_str(), (ws() + "/out").c_str()), 0);
  ASSERT_EQ(::symlink((ws() + "/real").c_str(), (ws() + "/in").c_str()), 0);
  ASSERT_EQ(::symlink((ws() + "/.git/hooks").c_str(), (ws() + "/hooks").c_str()), 0);
  std::string resolved;
  ConfinedFs cfs(policy_);
  EXPECT_EQ(cfs.Target(ws() + "/out/x", &resolved), EACCES);
  EXPECT_EQ(cfs.Target(ws() + "/hooks/pre-commit", &resolved), EROFS);
  EXPECT_EQ(cfs.Target(ws() + "/in/x", &resolved), 0);
  EXPECT_EQ(resolved, ws() + "/real/x");
  // The string a caller already checked is opened with no symlink on the way: a directory
  // swapped for a symlink after the check fails the open instead of moving it.
  EXPECT_EQ(Parent(ws() + "/in/x"), ELOOP);
  EXPECT_EQ(Parent(ws() + "/in/deeper/x"), ELOOP);
  // OpenParent makes its own check: it cannot be talked into a carve-out or outside.
  EXPECT_EQ(Parent(ws() + "/.git/hooks/pre-commit"), EROFS);
  EXPECT_EQ(Parent(base_ + "/outside/x"), EACCES);
  EXPECT_EQ(Parent(ws()), EINVAL);  // the root itself is not a file
}

TEST_F(ConfinedFsTest, ASymlinkAsTheLastComponentIsReplacedNotFollowed) {
  WriteText(base_ + "/outside/target", "keep\n");
  ASSERT_EQ(::symlink((base_ + "/outside/target").c_str(), (ws() + "/lnk").c_str()), 0);
  ConfinedFs cfs(policy_);
  Location at;
  ASSERT_EQ(cfs.OpenParent(ws() + "/lnk", &at, nullptr), 0);
  FileRead read;
  EXPECT_EQ(cfs.Read(at, &read), ELOOP);
  ASSERT_EQ(cfs.Replace(at, "new\n", 0644, true), 0);
  EXPECT_EQ(ReadText(base_ + "/outside/target"), "keep\n");
  struct stat st {};
  ASSERT_EQ(::lstat((ws() + "/lnk").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(ReadText(ws() + "/lnk"), "new\n");
}

TEST_F(ConfinedFsTest, WritesCreateDirectoriesReplaceAndDelete) {
  ConfinedFs cfs(policy_);
  Location at;
  std::vector<Location> made;
  ASSERT_EQ(cfs.OpenParent(ws() + "/n1/n2/f.txt", &at, &made), 0);
  ASSERT_EQ(made.size(), 2u);
  EXPECT_EQ(made[0].path, ws() + "/n1");
  EXPECT_EQ(made[1].path, ws() + "/n1/n2");
  EXPECT_EQ(made[1].name, "n2");
  ASSERT_EQ(cfs.Replace(at, "x\n", 0, false), 0);
  EXPECT_EQ(ReadText(ws() + "/n1/n2/f.txt"), "x\n");
  FileRead read;
  ASSERT_EQ(cfs.Read(at, &read), 0);
  ASSERT_TRUE(read.content);
  EXPECT_EQ(*read.content, "x\n");
  ASSERT_EQ(cfs.Unlink(at), 0);
  EXPECT_EQ(cfs.Unlink(at), ENOENT);
  ASSERT_EQ(cfs.Read(at, &read), 0);
  EXPECT_FALSE(read.content);  // nothing there: no error
  // A missing directory reads as nothing; without `made` it is not created.
  EXPECT_EQ(cfs.OpenParent(ws() + "/missing/f", &at, nullptr), ENOENT);
  EXPECT_FALSE(Exists(ws() + "/missing"));
  // A regular file where a directory is expected.
  WriteText(ws() + "/file", "");
  EXPECT_EQ(cfs.OpenParent(ws() + "/file/f", &at, nullptr), ENOTDIR);
  // The made directories are removed through their parents' descriptors, innermost first.
  EXPECT_EQ(cfs.RemoveDir(made[1]), 0);
  EXPECT_EQ(cfs.RemoveDir(made[0]), 0);
  EXPECT_FALSE(Exists(ws() + "/n1"));
}

TEST_F(ConfinedFsTest, SpecialFilesAreRefusedWithoutOpeningThem) {
  ConfinedFs cfs(policy_);
  ASSERT_EQ(::mkfifo((ws() + "/p").c_str(), 0644), 0);
  Location at;
  ASSERT_EQ(cfs.OpenParent(ws() + "/p", &at, nullptr), 0);
  // Opening a FIFO for reading blocks until a writer comes: the read must return on its own.
  auto done = std::async(std::launch::async, [&] {
    FileRead read;
    int err = cfs.Read(at, &read);
    return std::make_pair(err, read.type);
  });
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    int unblock = ::open((ws() + "/p").c_str(), O_WRONLY | O_NONBLOCK);  // let the test end
    ADD_FAILURE() << "reading a FIFO blocked";
    done.wait();
    ::close(unblock);
  }
  auto [err, type] = done.get();
  EXPECT_EQ(err, EINVAL);
  EXPECT_EQ(type, static_cast<mode_t>(S_IFIFO));
  EXPECT_STREQ(FileTypeName(type), "a FIFO");

  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = ws() + "/s";
  ASSERT_LT(sock_path.size(), sizeof(addr.sun_path));
  std::strcpy(addr.sun_path, sock_path.c_str());
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(sock);
  FileRead read;
  ASSERT_EQ(cfs.OpenParent(sock_path, &at, nullptr), 0);
  EXPECT_EQ(cfs.Read(at, &read), EINVAL);
  EXPECT_EQ(read.type, static_cast<mode_t>(S_IFSOCK));

  ASSERT_EQ(cfs.OpenParent(ws() + "/real", &at, nullptr), 0);
  EXPECT_EQ(cfs.Read(at, &read), EISDIR);

  if (::mknod((ws() + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "cannot create a device node here (" << std::strerror(errno)
                 << "); FIFO, socket and directory were checked";
  }
  ASSERT_EQ(cfs.OpenParent(ws() + "/null", &at, nullptr), 0);
  EXPECT_EQ(cfs.Read(at, &read), EINVAL);
  EXPECT_EQ(read.type, static_cast<mode_t>(S_IFCHR));
}

TEST_F(ConfinedFsTest, AMountPointInsideARootIsNotCrossed) {
  Sh("mkdir -p ws/mnt", base_);
  if (::mount("tmpfs", (ws() + "/mnt").c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  EXPECT_EQ(Parent(ws() + "/mnt/f"), EXDEV);
  ::umount2((ws() + "/mnt").c_str(), MNT_DETACH);
}

TEST_F(ConfinedFsTest, UnrestrictedFollowsNothingButChecksNothing) {
  policy_.mode = Mode::kDangerFullAccess;
  EXPECT_EQ(Target(base_ + "/outside/x"), 0);
  EXPECT_EQ(Parent(base_ + "/outside/x"), 0);
  EXPECT_EQ(Target(ws() + "/.git/hooks/x"), 0);
}

}  // namespace
}  // namespace ae::sandbox
