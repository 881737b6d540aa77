// Progress for long commands under a fake clock: CI notices at a growing interval, the live
// terminal line, and the sink that clears the line before other output.
#include "outputs/progress.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>

#include "base/fd.h"

namespace ae {
namespace {

Event Started(const std::string& id, const std::string& command) {
  return ItemStarted{
      Item{id, CommandExecutionItem{command, "", std::nullopt, ItemStatus::kInProgress}}};
}
Event Completed(const std::string& id) {
  return ItemCompleted{Item{id, CommandExecutionItem{"c", "", 0, ItemStatus::kCompleted}}};
}

TEST(ProgressTest, CiNoticesComeAtAGrowingInterval) {
  ProgressLines lines(ProgressOptions{});
  lines.OnEvent(Started("item_0", "/bin/bash -lc 'make test'"), 0);
  std::string all;
  for (int64_t t = 0; t <= 8 * 60 * 1000; t += 1000) all += lines.Tick(t);
  EXPECT_EQ(all,
            "still running (30.0s): /bin/bash -lc 'make test'\n"
            "still running (1m30s): /bin/bash -lc 'make test'\n"
            "still running (3m30s): /bin/bash -lc 'make test'\n"
            "still running (7m30s): /bin/bash -lc 'make test'\n");
  lines.OnEvent(Completed("item_0"), 480000);
  EXPECT_EQ(lines.Tick(20 * 60 * 1000), "");
}

TEST(ProgressTest, CiNoticesStopGrowingAtTheCap) {
  ProgressOptions opt;
  opt.first_notice_ms = 1000;
  opt.max_interval_ms = 4000;
  ProgressLines lines(opt);
  lines.OnEvent(Started("item_3", "sleep 100"), 0);
  std::string all;
  for (int64_t t = 0; t <= 20000; t += 1000) all += lines.Tick(t);
  EXPECT_EQ(all,
            "still running (1.0s): sleep 100\n"
            "still running (3.0s): sleep 100\n"
            "still running (7.0s): sleep 100\n"
            "still running (11.0s): sleep 100\n"
            "still running (15.0s): sleep 100\n"
            "still running (19.0s): sleep 100\n");
}

TEST(ProgressTest, ShortCommandsPrintNothing) {
  ProgressLines ci(ProgressOptions{});
  ProgressOptions tty;
  tty.terminal = true;
  ProgressLines live(tty);
  for (ProgressLines* l : {&ci, &live}) {
    l->OnEvent(Started("item_0", "true"), 0);
    EXPECT_EQ(l->Tick(1000), "");
    l->OnEvent(Completed("item_0"), 1500);
    EXPECT_EQ(l->Tick(60000), "");
    EXPECT_EQ(l->Clear(), "");
  }
}

TEST(ProgressTest, TerminalLineShowsTheOldestCommandAndIsCleared) {
  ProgressOptions opt;
  opt.terminal = true;
  ProgressLines lines(opt);
  lines.OnEvent(Started("item_1", "cargo build"), 0);
  EXPECT_EQ(lines.Tick(1000), "");
  EXPECT_EQ(lines.Tick(2000), "\r\x1b[2Krunning (2.0s): cargo build");
  lines.OnEvent(Started("item_2", "npm test"), 2500);
  EXPECT_EQ(lines.Tick(130000), "\r\x1b[2Krunning (2m10s): cargo build (+1 more)");
  EXPECT_EQ(lines.Clear(), "\r\x1b[2K");
  EXPECT_EQ(lines.Clear(), "");
  lines.OnEvent(Completed("item_1"), 131000);
  EXPECT_EQ(lines.Tick(131000), "\r\x1b[2Krunning (2m08s): npm test");
  lines.OnEvent(Completed("item_2"), 132000);
  EXPECT_EQ(lines.Tick(132000), "\r\x1b[2K");  // nothing runs: the line goes away
}

class Recorder : public EventSink {
 public:
  void Emit(const Event&) override { ++events; }
  void Close() override { closed = true; }
  int events = 0;
  bool closed = false;
};

TEST(ProgressTest, SinkForwardsEventsAndWritesNoticesFromItsTicker) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Fd r(fds[0]), w(fds[1]);
  std::atomic<int64_t> now{0};
  Recorder inner;
  ProgressOptions opt;
  opt.first_notice_ms = 5000;
  {
    ProgressSink sink(inner, w.get(), opt, [&] { return now.load(); });
    sink.Emit(Started("item_0", "make"));
    now = 6000;  // the ticker (once a second) sees the command running for 6s
    pollfd p{r.get(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10000), 1) << "no notice within 10s";  // the ticker runs every 1s
    char buf[256];
    ssize_t n = ::read(r.get(), buf, sizeof buf);
    ASSERT_GT(n, 0);
    EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), "still running (6.0s): make\n");
    sink.Emit(Completed("item_0"));
    sink.Close();
  }
  EXPECT_EQ(inner.events, 2);
  EXPECT_TRUE(inner.closed);
}

}  // namespace
}  // namespace ae
