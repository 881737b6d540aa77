#include "base/read_file.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

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

}  // namespace
}  // namespace ae
