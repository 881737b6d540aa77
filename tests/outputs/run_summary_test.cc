// The summary line human mode ends with, from the events of a run.
#include "outputs/run_summary.h"

#include <gtest/gtest.h>

namespace ae {
namespace {

Event Command(const std::string& id, int exit_code) {
  return ItemCompleted{Item{
      id, CommandExecutionItem{"c", "", exit_code,
                               exit_code == 0 ? ItemStatus::kCompleted : ItemStatus::kFailed}}};
}

Event Patch(const std::string& id, std::vector<std::string> paths, ItemStatus status) {
  FileChangeItem f;
  for (const std::string& p : paths) f.changes.push_back({p, FileChangeKind::kUpdate, ""});
  f.status = status;
  return ItemCompleted{Item{id, f}};
}

TEST(RunSummaryTest, CountsCommandsFailuresAndDistinctChangedFiles) {
  RunTally tally;
  for (const Event& e : {Command("item_0", 0), Command("item_1", 2), Command("item_2", 0),
                         Patch("item_3", {"/r/a", "/r/b"}, ItemStatus::kCompleted),
                         Patch("item_4", {"/r/a"}, ItemStatus::kCompleted),
                         Patch("item_5", {"/r/z"}, ItemStatus::kFailed)}) {
    tally.Observe(e);
  }
  // A started item is not counted twice.
  tally.Observe(ItemStarted{Item{"item_6", CommandExecutionItem{}}});
  EXPECT_EQ(tally.Line(TurnCompleted{Usage{1000, 200, 0, 50, 0}, TurnStats{4210, 2, {}}}),
            "done in 4.2s: 2 requests, 850 tokens, 3 commands (1 failed), 2 files changed");
  EXPECT_EQ(tally.Line(TurnFailed{"x", ErrorCode::kRateLimited, Usage{}, TurnStats{130000, 1, {}}}),
            "failed (rate_limited) after 2m10s: 1 request, 0 tokens, 3 commands (1 failed), 2 "
            "files changed");
}

TEST(RunSummaryTest, ElapsedTime) {
  EXPECT_EQ(FormatElapsed(0), "0.0s");
  EXPECT_EQ(FormatElapsed(950), "0.9s");
  EXPECT_EQ(FormatElapsed(59999), "59.9s");
  EXPECT_EQ(FormatElapsed(60000), "1m00s");
  EXPECT_EQ(FormatElapsed(130000), "2m10s");
  EXPECT_EQ(FormatElapsed(3723000), "1h02m03s");
}

}  // namespace
}  // namespace ae
