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
  // The last request's count, and the items it covered, carry the context's size over.
  EXPECT_EQ(loaded->last_usage, (Usage{1, 0, 0, 1, 0}));
  EXPECT_EQ(loaded->last_usage_items, 2u);

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

// A command that can write the home (one under /tmp) plants `sessions` as a symlink: the next
// run's session file must not be created where it points.
TEST_F(RolloutTest, APlantedSessionsLinkIsNotFollowed) {
  const std::string elsewhere = home_ + "/elsewhere";
  std::filesystem::create_directories(home_ + "/home");
  std::filesystem::create_directories(elsewhere);
  std::filesystem::create_symlink(elsewhere, home_ + "/home/sessions");
  SessionMeta meta{"0190-bbbb", "/w", "2026-11-22T00:00:00Z", "gpt-5", "openai", "read-only"};
  auto w = RolloutWriter::Create(home_ + "/home", meta);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.message().find("cannot create session directory '" + home_ + "/home/sessions/"), 0u)
      << w.message();
  const std::string why = "': Too many levels of symbolic links";
  EXPECT_EQ(w.message().rfind(why), w.message().size() - why.size()) << w.message();
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere));
}

// A session file that is a symlink out of the sessions directory is neither found by
// `resume --last` nor loaded.
TEST_F(RolloutTest, ASessionLinkedFromOutsideIsNotRead) {
  const std::string outside = home_ + "/outside.jsonl";
  std::ofstream(outside)
      << R"({"type":"session_meta","payload":{"thread_id":"0190-cccc","cwd":"/w"}})"
      << "\n";
  std::filesystem::create_directories(home_ + "/sessions/2026/11/22");
  const std::string link =
      home_ + "/sessions/2026/11/22/rollout-2026-11-22T00-00-00-0190-cccc.jsonl";
  std::filesystem::create_symlink(outside, link);
  auto latest = FindLatestRollout(home_, "/w");
  EXPECT_EQ(latest.message(), "no earlier session to resume for /w under " + home_ + "/sessions");
  auto loaded = LoadRollout(link, SessionsDir(home_));
  EXPECT_EQ(loaded.message(), "cannot read session file '" + link +
                                  "': a symbolic link leads outside the directory it is read from");
  std::filesystem::remove(link);
  std::filesystem::create_symlink("/proc/self/environ", link);
  EXPECT_EQ(LoadRollout(link).message(),
            "cannot read session file '" + link + "': on the proc pseudo file system");
}

}  // namespace
}  // namespace ae

namespace ae {
namespace {

// A full disk is reported once, and nothing more is written after a torn line.
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
