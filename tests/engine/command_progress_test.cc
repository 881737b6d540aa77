// --progress under a fake clock: output so far, at most once per interval.
#include "engine/events/command_progress.h"

#include <gtest/gtest.h>

#include <vector>

namespace ae {
namespace {

TEST(CommandProgressTest, PublishesOutputSoFarAtMostOncePerInterval) {
  int64_t now = 1000;
  std::vector<std::pair<int64_t, std::string>> published;
  CommandProgress progress(
      3000, [&] { return now; },
      [&](const std::string& so_far) {
        published.push_back({now, so_far});
      });
  progress.OnOutput("a\n", 2);  // t=0: too early
  now = 3999;
  progress.OnOutput("b\n", 2);  // 2999ms: still too early
  now = 4000;
  progress.OnOutput("c\n", 2);  // 3s: published
  now = 5000;
  progress.OnOutput("d\n", 2);  // 1s later: held back
  now = 7000;
  progress.OnOutput("e\n", 2);  // 3s after the last update
  EXPECT_EQ(published, (std::vector<std::pair<int64_t, std::string>>{{4000, "a\nb\nc\n"},
                                                                     {7000, "a\nb\nc\nd\ne\n"}}));
}

TEST(CommandProgressTest, KeepsOnlyTheTail) {
  int64_t now = 0;
  std::string last;
  CommandProgress progress(
      1, [&] { return now; }, [&](const std::string& s) { last = s; });
  std::string big(CommandProgress::kMaxBytes, 'x');
  now = 5;
  progress.OnOutput(big.data(), big.size());
  now = 10;
  progress.OnOutput("tail", 4);
  EXPECT_EQ(last.size(), CommandProgress::kMaxBytes);
  EXPECT_EQ(last.substr(last.size() - 5), "xtail");
}

}  // namespace
}  // namespace ae
