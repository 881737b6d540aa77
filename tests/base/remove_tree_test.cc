// RemoveTreeAt on what a command can leave in its /tmp: links out (never followed), directories
// closed by their mode, a FIFO, and a tree deeper than the remover holds descriptors for.
#include "base/remove_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/fd.h"
#include "tests/support/scratch_dir.h"

namespace ae {
namespace {

namespace fs = std::filesystem;

class RemoveTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_fd_.reset(::open(dir_.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir_fd_.valid());
    fs::create_directories(Path("outside/dir"));
    std::ofstream(Path("outside/file")) << "keep";
    std::ofstream(Path("outside/dir/inner")) << "keep";
  }
  std::string Path(const std::string& rel) const { return dir_.path() + "/" + rel; }
  bool Exists(const std::string& rel) const {
    struct stat st {};
    return ::lstat(Path(rel).c_str(), &st) == 0;
  }
  // What a command leaves in a tree: files, links out of it, a FIFO, and directories whose
  // mode keeps their owner out.
  void Plant(const std::string& top) {
    fs::create_directories(Path(top + "/a/b/c"));
    std::ofstream(Path(top + "/a/b/c/f")) << "x";
    fs::create_symlink(Path("outside/file"), Path(top + "/link-to-file"));
    fs::create_symlink(Path("outside/dir"), Path(top + "/a/link-to-dir"));
    ASSERT_EQ(::mkfifo(Path(top + "/fifo").c_str(), 0600), 0);
    fs::create_directories(Path(top + "/closed/sub"));
    std::ofstream(Path(top + "/closed/sub/f")) << "x";
    std::ofstream(Path(top + "/readonly-file")) << "x";
    fs::create_directories(Path(top + "/no-write"));
    std::ofstream(Path(top + "/no-write/f")) << "x";
    ASSERT_EQ(::chmod(Path(top + "/closed/sub").c_str(), 0), 0);
    ASSERT_EQ(::chmod(Path(top + "/closed").c_str(), 0), 0);
    ASSERT_EQ(::chmod(Path(top + "/no-write").c_str(), 0500), 0);
    ASSERT_EQ(::chmod(Path(top + "/readonly-file").c_str(), 0), 0);
  }
  void ExpectOutsideIntact() {
    EXPECT_TRUE(Exists("outside/file"));
    EXPECT_TRUE(Exists("outside/dir/inner"));
  }
  test::ScratchDir dir_;
  Fd dir_fd_;
};

TEST_F(RemoveTreeTest, RemovesEverythingAndFollowsNoLink) {
  Plant("tree");
  EXPECT_EQ(RemoveTreeAt(dir_fd_.get(), "tree"), 0);
  EXPECT_FALSE(Exists("tree"));
  ExpectOutsideIntact();
}

TEST_F(RemoveTreeTest, ATopThatIsALinkIsRemovedNotFollowed) {
  fs::create_symlink(Path("outside/dir"), Path("tree"));
  EXPECT_EQ(RemoveTreeAt(dir_fd_.get(), "tree"), 0);
  EXPECT_FALSE(Exists("tree"));
  ExpectOutsideIntact();
}

TEST_F(RemoveTreeTest, ATopClosedByItsModeIsOpenedAndRemoved) {
  Plant("tree");
  ASSERT_EQ(::chmod(Path("tree").c_str(), 0), 0);
  EXPECT_EQ(RemoveTreeAt(dir_fd_.get(), "tree"), 0);
  EXPECT_FALSE(Exists("tree"));
  ExpectOutsideIntact();
}

TEST_F(RemoveTreeTest, MissingIsNotAnError) {
  EXPECT_EQ(RemoveTreeAt(dir_fd_.get(), "never-made"), 0);
}

// 1,000 levels, each with a file and a link out: far deeper than the descriptors the remover
// holds at once (it moves what lies deeper up, into the top, and goes on from there).
TEST_F(RemoveTreeTest, ATreeOfAnyDepthIsRemoved) {
  ASSERT_EQ(::mkdir(Path("tree").c_str(), 0700), 0);
  Fd at(::open(Path("tree").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (int level = 0; level < 1000 && at.valid(); ++level) {
    Fd file(::openat(at.get(), "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    ASSERT_TRUE(file.valid());
    ASSERT_EQ(::symlinkat(Path("outside/dir").c_str(), at.get(), "out"), 0);
    ASSERT_EQ(::mkdirat(at.get(), "d", 0700), 0);
    at.reset(::openat(at.get(), "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  ASSERT_TRUE(at.valid());
  at.reset();
  EXPECT_EQ(RemoveTreeAt(dir_fd_.get(), "tree"), 0);
  EXPECT_FALSE(Exists("tree"));
  ExpectOutsideIntact();
}

}  // namespace
}  // namespace ae
