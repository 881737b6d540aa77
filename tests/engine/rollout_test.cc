#include "engine/rollout.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/scratch_dir.h"

namespace ae {
namespace {

namespace fs = std::filesystem;

class RolloutTest : public ::testing::Test {
 protected:
  test::ScratchDir scratch_{"ae-rollout"};
  std::string home_ = scratch_.path();
};

TEST_F(RolloutTest, WriteLoadAndResumeAppends) {
  SessionMeta meta{"0190-aaaa", "/w", "2026-11-22T00:00:00Z", "gpt-5", "openai", "read-only"};
  std::string path;
  {
    auto w = RolloutWriter::Create(home_, meta);
    ASSERT_TRUE(w.ok()) << w.message();
    path = (*w)->path();
    (*w)->AddItem(R"({"type":"message","role":"user","content":[]})");
    (*w)->AddUsage(Usage{10, 2, 0, 5, 1});
  }
  EXPECT_NE(path.find(home_ + "/sessions/"), std::string::npos);
  EXPECT_EQ(path.substr(path.size() - 16), "-0190-aaaa.jsonl");
  {
    // The first line as codex writes it: readers of codex's files find the id there.
    std::ifstream in(path);
    std::string first;
    std::getline(in, first);
    EXPECT_EQ(first, R"({"timestamp":"2026-11-22T00:00:00Z","type":"session_meta","payload":{"id":)"
                     R"("0190-aaaa","timestamp":"2026-11-22T00:00:00Z","thread_id":"0190-aaaa",)"
                     R"("cwd":"/w","created_at":"2026-11-22T00:00:00Z","model":"gpt-5",)"
                     R"("provider":"openai","sandbox":"read-only"}})");
  }
  {
    auto w = RolloutWriter::Append(path);
    ASSERT_TRUE(w.ok());
    (*w)->AddItem(R"({"type":"function_call_output","call_id":"c","output":"x"})");
    (*w)->AddUsage(Usage{1, 0, 0, 1, 0});
  }
  auto loaded = LoadRollout(path);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ(loaded->meta.thread_id, "0190-aaaa");
  EXPECT_EQ(loaded->meta.cwd, "/w");
  EXPECT_EQ(loaded->meta.sandbox, "read-only");
  EXPECT_EQ(loaded->items, (std::vector<std::string>{
                               R"({"type":"message","role":"user","content":[]})",
                               R"({"type":"function_call_output","call_id":"c","output":"x"})"}));
  EXPECT_EQ(loaded->usage, (Usage{11, 2, 0, 6, 1}));

  auto by_id = FindRolloutById(home_, "0190-aaaa");
  ASSERT_TRUE(by_id.ok());
  EXPECT_EQ(*by_id, path);
  auto latest = FindLatestRollout(home_, "/w");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(*latest, path);
}

TEST_F(RolloutTest, UnknownIdAndNoSessionAreErrors) {
  auto by_id = FindRolloutById(home_, "nope");
  ASSERT_FALSE(by_id.ok());
  EXPECT_EQ(by_id.message(), "no session with id 'nope' under " + home_ + "/sessions");
  auto latest = FindLatestRollout(home_, "/elsewhere");
  ASSERT_FALSE(latest.ok());
  EXPECT_EQ(latest.message(),
            "no earlier session to resume for /elsewhere under " + home_ + "/sessions");
}

TEST_F(RolloutTest, ATornLastLineIsDropped) {
  std::string path = home_ + "/rollout-x.jsonl";
  std::ofstream(path) << R"({"type":"session_meta","payload":{"thread_id":"t","cwd":"/w"}})"
                      << "\n"
                      << R"({"type":"response_item","payload":{"a":1}})"
                      << "\n"
                      << R"({"type":"response_it)";
  auto loaded = LoadRollout(path);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ(loaded->items, (std::vector<std::string>{R"({"a":1})"}));
}

}  // namespace
}  // namespace ae

namespace ae {
namespace {

// Issue 12: a full disk is reported once, and nothing more is written after a torn line.
TEST(RolloutWriteErrorTest, AFullDiskIsReportedOnce) {
  auto w = RolloutWriter::Append("/dev/full");
  if (!w.ok()) GTEST_SKIP() << "no /dev/full here: " << w.message();
  std::vector<std::string> reports;
  (*w)->OnError([&](const std::string& why) { reports.push_back(why); });
  (*w)->AddItem(R"({"type":"message","role":"user","content":[]})");
  (*w)->AddUsage(Usage{1, 0, 0, 1, 0});
  (*w)->AddItem(R"({"type":"message","role":"user","content":[]})");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0],
            "cannot write session file '/dev/full': No space left on device; this run cannot be "
            "resumed");
  EXPECT_TRUE((*w)->failed());
  EXPECT_EQ((*w)->error(), reports[0]);
}

}  // namespace
}  // namespace ae
