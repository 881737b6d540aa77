#include "base/read_file.h"

#include <fcntl.h>

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/beneath.h"
#include "tests/support/scratch_dir.h"

namespace ae {
namespace {

class ReadFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  test::ScratchDir dir_;
};

TEST_F(ReadFileTest, ARegularFileWholeAPrefixAndItsFirstLine) {
  const std::string path = Write("f", "one\ntwo\n");
  EXPECT_EQ(*ReadRegularFile(path), "one\ntwo\n");
  EXPECT_EQ(*ReadRegularFile(path, 5), "one\nt");
  EXPECT_EQ(*ReadRegularFirstLine(path, 100), "one");
  EXPECT_EQ(*ReadRegularFirstLine(path, 2), "on");  // the bound holds without a newline
  EXPECT_EQ(*ReadRegularFirstLine(Write("g", "no newline"), 100), "no newline");
  EXPECT_EQ(*ReadNamedFile(path), "one\ntwo\n");
}

// A FIFO with no writer would block open(2) forever; a FIFO with a writer that never writes
// would block read(2). Either way it is refused at once, and its writer never sees a reader.
TEST_F(ReadFileTest, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = dir_.path() + "/p";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadRegularFile(fifo).message(), "not a regular file");
  EXPECT_EQ(ReadRegularFirstLine(fifo, 10).message(), "not a regular file");
}

TEST_F(ReadFileTest, DirectoriesSocketsDevicesAndMissingFilesSayWhy) {
  EXPECT_EQ(ReadRegularFile(dir_.path()).message(), "Is a directory");
  EXPECT_EQ(ReadNamedFile(dir_.path()).message(), "Is a directory");
  EXPECT_EQ(ReadRegularFile(dir_.path() + "/none").message(), "No such file or directory");
  EXPECT_EQ(ReadNamedFile(dir_.path() + "/none").message(), "No such file or directory");
  EXPECT_EQ(ReadRegularFile("/dev/zero").message(), "not a regular file");
  const std::string sock_path = dir_.path() + "/s";
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock_path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(ReadRegularFile(sock_path).message(), "No such device or address");
  ::close(sock);
}

// What the user names may be a pipe (`--output-schema <(...)`): read to its end.
TEST_F(ReadFileTest, ANamedPipeIsReadToItsEnd) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "{}\n", 3), 3);
  ::close(fds[1]);
  EXPECT_EQ(*ReadNamedFile("/dev/fd/" + std::to_string(fds[0])), "{}\n");
  ::close(fds[0]);
}

// /proc/self/environ is a regular file, and read by agentexec it is agentexec's environment
// (API keys included). No reader returns it, however it is named or linked.
TEST_F(ReadFileTest, ProcAndSysFilesAreRefusedByEveryReader) {
  const std::string proc = "on the proc pseudo file system";
  EXPECT_EQ(ReadRegularFile("/proc/self/environ").message(), proc);
  EXPECT_EQ(ReadRegularFirstLine("/proc/self/environ", 10).message(), proc);
  EXPECT_EQ(ReadNamedFile("/proc/self/environ").message(), proc);
  const std::string link = dir_.path() + "/shot.png";
  std::filesystem::create_symlink("/proc/self/environ", link);
  EXPECT_EQ(ReadNamedFile(link).message(), proc);  // `-i shot.png` planted in the workspace
  EXPECT_EQ(ReadRegularFile(link).message(), proc);
  if (::access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) == 0) {
    EXPECT_EQ(ReadNamedFile("/sys/kernel/mm/transparent_hugepage/enabled").message(),
              "on the sysfs pseudo file system");
  }
}

TEST_F(ReadFileTest, AMissingFileIsTold) {
  EXPECT_EQ(ReadRegularFile(dir_.path() + "/none").error().code, kFileNotFound);
  EXPECT_EQ(ReadNamedFile(dir_.path() + "/none").error().code, kFileNotFound);
  EXPECT_EQ(ReadRegularFile(dir_.path()).error().code, "");
}

class BeneathTest : public ReadFileTest {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() + "/root/sub");
    Write("root/sub/doc.md", "inside");
    Write("secret", "outside");
    root_ = Fd(::open((dir_.path() + "/root").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_.valid());
  }
  void TearDown() override { PretendNoOpenat2ForTesting(false); }
  void Link(const std::string& target, const std::string& name) {
    std::filesystem::create_symlink(target, dir_.path() + "/root/" + name);
  }
  Fd root_;
};

constexpr const char* kOutside = "a symbolic link leads outside the directory it is read from";

TEST_F(BeneathTest, FilesBeneathAreReadAndLinksThatStayBeneathAreFollowed) {
  if (!Openat2Available()) GTEST_SKIP() << "openat2 is not available (Linux < 5.6)";
  Link("sub/doc.md", "AGENTS.md");
  EXPECT_EQ(*ReadRegularFileBeneath(root_.get(), "sub/doc.md"), "inside");
  EXPECT_EQ(*ReadRegularFileBeneath(root_.get(), "AGENTS.md"), "inside");
  EXPECT_EQ(*ReadRegularFirstLineBeneath(root_.get(), "AGENTS.md", 3), "ins");
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "none").error().code, kFileNotFound);
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "sub").message(), "Is a directory");
}

// A pull request can commit any of these as AGENTS.md.
TEST_F(BeneathTest, LinksOutOfTheDirectoryAreRefused) {
  if (!Openat2Available()) GTEST_SKIP() << "openat2 is not available (Linux < 5.6)";
  Link("/proc/self/environ", "environ");
  Link("../secret", "up");
  Link(dir_.path() + "/secret", "absolute");
  Link("..", "parent");
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "environ").message(), kOutside);
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "up").message(), kOutside);
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "absolute").message(), kOutside);
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "parent/secret").message(), kOutside);
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "../secret").message(), kOutside);
}

// Beneath /proc/self itself, fd/N are magic links (they go wherever the descriptor points):
// never followed. And what is reached beneath /proc is refused as a pseudo file anyway.
TEST_F(BeneathTest, MagicLinksAndPseudoFilesBeneathAreRefused) {
  if (!Openat2Available()) GTEST_SKIP() << "openat2 is not available (Linux < 5.6)";
  Fd proc(::open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(proc.valid());
  Fd secret(::open((dir_.path() + "/secret").c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(ReadRegularFileBeneath(proc.get(), "fd/" + std::to_string(secret.get())).message(),
            std::strerror(ELOOP));
  EXPECT_EQ(ReadRegularFileBeneath(proc.get(), "environ").message(),
            "on the proc pseudo file system");
}

// Linux < 5.6: no symlink is followed at all, and ".." is refused; plain files still read.
TEST_F(BeneathTest, WithoutOpenat2NoLinkIsFollowed) {
  PretendNoOpenat2ForTesting(true);
  ASSERT_FALSE(Openat2Available());
  Link("sub/doc.md", "AGENTS.md");
  Link("/proc/self/environ", "environ");
  Link("sub", "dirlink");
  EXPECT_EQ(*ReadRegularFileBeneath(root_.get(), "sub/doc.md"), "inside");
  EXPECT_EQ(*ReadRegularFileBeneath(root_.get(), "./sub//doc.md"), "inside");
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "AGENTS.md").message(), std::strerror(ELOOP));
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "environ").message(), std::strerror(ELOOP));
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "dirlink/doc.md").message(), std::strerror(ELOOP));
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "../secret").message(), kOutside);
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "sub/../../secret").message(), kOutside);
  EXPECT_EQ(ReadRegularFileBeneath(root_.get(), "none").error().code, kFileNotFound);
}

// The name replaced is a symlink a command planted: it is replaced, its target untouched.
TEST_F(BeneathTest, ReplaceAtReplacesAPlantedLinkAndLeavesNoTemporary) {
  Link(dir_.path() + "/secret", "out.txt");
  ASSERT_EQ(ReplaceAt(root_.get(), "out.txt", "answer", 0644, false), 0);
  EXPECT_FALSE(std::filesystem::is_symlink(dir_.path() + "/root/out.txt"));
  EXPECT_EQ(*ReadRegularFile(dir_.path() + "/root/out.txt"), "answer");
  EXPECT_EQ(*ReadRegularFile(dir_.path() + "/secret"), "outside");
  ASSERT_EQ(ReplaceAt(root_.get(), "mode.txt", "x", 0600, true), 0);
  struct stat st {};
  ASSERT_EQ(::stat((dir_.path() + "/root/mode.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/root")) {
    EXPECT_EQ(e.path().filename().string().find(".ae-tmp-"), std::string::npos) << e.path();
  }
  EXPECT_EQ(ReplaceAt(root_.get(), "a/b", "x", 0644, false), EINVAL);
  EXPECT_EQ(ReplaceAt(root_.get(), "..", "x", 0644, false), EINVAL);
}

// kBeneathFresh: the last directory must be made by this call; one already there (a
// directory or a planted link) is refused, and the parents may exist.
TEST_F(BeneathTest, AFreshDirectoryIsMadeNowOrRefused) {
  Fd made;
  ASSERT_EQ(MakeDirsBeneath(root_.get(), "sub/new", kBeneathNoSymlinks | kBeneathFresh, &made), 0);
  EXPECT_TRUE(std::filesystem::is_directory(dir_.path() + "/root/sub/new"));
  EXPECT_EQ(MakeDirsBeneath(root_.get(), "sub/new", kBeneathNoSymlinks | kBeneathFresh, &made),
            EEXIST);
  Link(dir_.path(), "planted");
  EXPECT_EQ(MakeDirsBeneath(root_.get(), "planted", kBeneathNoSymlinks | kBeneathFresh, &made),
            EEXIST);
  EXPECT_EQ(MakeDirsBeneath(root_.get(), "sub/new", kBeneathNoSymlinks, &made), 0);
}

// An earlier attempt's entry moves to the first free ".tag-NAME-K"; a missing one is no error;
// a planted link is moved, never followed.
TEST_F(BeneathTest, MoveAsideAtTakesTheFirstFreeNameAndMovesLinksThemselves) {
  std::string aside;
  EXPECT_EQ(MoveAsideAt(root_.get(), "none", ".tag", &aside), 0);
  EXPECT_EQ(aside, "");
  std::filesystem::create_directories(dir_.path() + "/root/.tag-sub-1");
  ASSERT_EQ(MoveAsideAt(root_.get(), "sub", ".tag", &aside), 0);
  EXPECT_EQ(aside, ".tag-sub-2");
  EXPECT_EQ(*ReadRegularFile(dir_.path() + "/root/.tag-sub-2/doc.md"), "inside");
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/root/sub"));
  Link(dir_.path() + "/secret", "link");
  ASSERT_EQ(MoveAsideAt(root_.get(), "link", ".tag", &aside), 0);
  EXPECT_EQ(aside, ".tag-link-1");
  EXPECT_TRUE(std::filesystem::is_symlink(dir_.path() + "/root/.tag-link-1"));
  EXPECT_EQ(*ReadRegularFile(dir_.path() + "/secret"), "outside");
  EXPECT_EQ(MoveAsideAt(root_.get(), "a/b", ".tag", &aside), EINVAL);
}

}  // namespace
}  // namespace ae
