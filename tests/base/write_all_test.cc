#include "base/write_all.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <thread>

#include "base/fd.h"

namespace ae {
namespace {

TEST(WriteAllTest, WritesEverythingThroughShortWrites) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  Fd r(p[0]), w(p[1]);
  std::string data(1 << 20, 'x');  // 16x a pipe's buffer: many short writes
  for (size_t i = 0; i < data.size(); i += 4093) data[i] = static_cast<char>('a' + i % 26);
  std::string got;
  std::thread reader([&] {
    char buf[8192];
    ssize_t n;
    while ((n = ::read(r.get(), buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  });
  EXPECT_TRUE(WriteAll(w.get(), data).ok());
  CancelToken cancel;  // the cancel-aware path, PIPE_BUF at a time
  EXPECT_TRUE(WriteAll(w.get(), data, &cancel).ok());
  w.reset();
  reader.join();
  EXPECT_EQ(got, data + data);
}

TEST(WriteAllTest, AFullDiskIsAnError) {
  Fd full(::open("/dev/full", O_WRONLY | O_CLOEXEC));
  if (!full) GTEST_SKIP() << "no /dev/full here";
  int err = 0;
  Status s = WriteAll(full.get(), "line\n", nullptr, &err);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "No space left on device");
  EXPECT_EQ(err, ENOSPC);
}

TEST(WriteAllTest, AVanishedReaderIsEpipe) {
  ::signal(SIGPIPE, SIG_IGN);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  Fd w(p[1]);
  ::close(p[0]);
  CancelToken cancel;
  int err = 0;
  Status s = WriteAll(w.get(), "line\n", &cancel, &err);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(err, EPIPE);
  EXPECT_EQ(s.message(), "Broken pipe");
}

TEST(WriteAllTest, AReaderThatStopsReadingIsGivenUpOnAfterACancel) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  Fd r(p[0]), w(p[1]);
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel.Cancel(CancelReason::kSigterm);
  });
  // Nobody reads: without the cancel this write would block forever.
  int err = 0;
  Status s = WriteAll(w.get(), std::string(1 << 20, 'x'), &cancel, &err);
  canceller.join();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(err, ETIMEDOUT);
}

}  // namespace
}  // namespace ae
