#include "outputs/last_message.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/scratch_dir.h"

namespace ae {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class LastMessageTest : public ::testing::Test {
 protected:
  test::ScratchDir scratch_{"ae-lastmsg"};
  std::string dir_ = scratch_.path();
};

TEST_F(LastMessageTest, KeepsTheLastAgentMessageOnly) {
  LastMessageSink sink;
  EXPECT_FALSE(sink.has_message());
  sink.Emit(ItemCompleted{Item{"item_0", AgentMessageItem{"commentary"}}});
  sink.Emit(ItemCompleted{Item{"item_1", ReasoningItem{"thinking"}}});
  sink.Emit(ItemCompleted{Item{"item_2", AgentMessageItem{"final"}}});
  sink.Emit(ItemStarted{Item{"item_3", CommandExecutionItem{}}});
  EXPECT_TRUE(sink.has_message());
  EXPECT_EQ(sink.text(), "final");
}

TEST_F(LastMessageTest, PrepareCreatesParentsAndWriteHasNoTrailingNewline) {
  std::string path = dir_ + "/a/b/last.txt";
  Result<OutputFile> out = PrepareOutputFile(path);
  ASSERT_TRUE(out.ok()) << out.message();
  EXPECT_TRUE(fs::is_directory(dir_ + "/a/b"));
  EXPECT_TRUE(fs::is_empty(dir_ + "/a/b"));  // the probe leaves nothing behind
  ASSERT_TRUE(WriteOutputFile(*out, "answer").ok());
  EXPECT_EQ(Slurp(path), "answer");
}

TEST_F(LastMessageTest, PrepareRejectsADirectory) {
  Result<OutputFile> s = PrepareOutputFile(dir_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--output-last-message '" + dir_ + "' is a directory");
}

TEST_F(LastMessageTest, PrepareRejectsAPathUnderAFile) {
  std::string file = dir_ + "/plain";
  std::ofstream(file) << "x";
  Result<OutputFile> s = PrepareOutputFile(file + "/out.txt");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot create directory '" + file + "'"), std::string::npos)
      << s.message();
}

// What a command can leave beside FILE during the turn. agentexec used to write through
// FILE.tmp-<its pid>, opened with O_TRUNC, following a symlink planted under that name.
TEST_F(LastMessageTest, PlantedTemporaryNamesAndLinksAreNeverFollowed) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious";
  fs::create_directories(dir_ + "/out");
  const std::string path = dir_ + "/out/last.txt";
  Result<OutputFile> out = PrepareOutputFile(path);
  ASSERT_TRUE(out.ok()) << out.message();
  fs::create_symlink(victim, path + ".tmp-" + std::to_string(::getpid()));
  fs::create_symlink(victim, path);
  ASSERT_TRUE(WriteOutputFile(*out, "answer").ok());
  EXPECT_EQ(Slurp(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(path));  // the link at the name is replaced, not followed
  EXPECT_EQ(Slurp(path), "answer");
}

// A command moves FILE's directory away and puts a symlink to another directory in its place:
// the write neither follows the link nor lands where nobody looks; it fails and says why.
TEST_F(LastMessageTest, ADirectoryReplacedDuringTheRunFailsClosed) {
  const std::string elsewhere = dir_ + "/elsewhere";
  fs::create_directories(elsewhere);
  const std::string path = dir_ + "/out/last.txt";
  Result<OutputFile> out = PrepareOutputFile(path);
  ASSERT_TRUE(out.ok()) << out.message();
  fs::rename(dir_ + "/out", dir_ + "/out.orig");
  fs::create_symlink(elsewhere, dir_ + "/out");
  Status s = WriteOutputFile(*out, "answer");
  EXPECT_EQ(s.message(), "cannot write --output-last-message '" + path + "': its directory '" +
                             dir_ + "/out' was replaced during the run");
  EXPECT_TRUE(fs::is_empty(elsewhere));
  EXPECT_TRUE(fs::is_empty(dir_ + "/out.orig"));
  // A plain directory in its place is no better: it is not the one that was checked.
  fs::remove(dir_ + "/out");
  fs::create_directories(dir_ + "/out");
  EXPECT_EQ(WriteOutputFile(*out, "answer").message(), s.message());
  EXPECT_TRUE(fs::is_empty(dir_ + "/out"));
  fs::remove(dir_ + "/out");
  EXPECT_EQ(WriteOutputFile(*out, "answer").message(), "cannot write --output-last-message '" +
                                                           path + "': its directory '" + dir_ +
                                                           "/out' was removed during the run");
}

// A symlink to the held directory, wherever it was moved, still names it: that write is fine.
TEST_F(LastMessageTest, ALinkBackToTheHeldDirectoryIsWrittenThrough) {
  const std::string path = dir_ + "/out/last.txt";
  Result<OutputFile> out = PrepareOutputFile(path);
  ASSERT_TRUE(out.ok()) << out.message();
  fs::rename(dir_ + "/out", dir_ + "/moved");
  fs::create_symlink(dir_ + "/moved", dir_ + "/out");
  ASSERT_TRUE(WriteOutputFile(*out, "answer").ok());
  EXPECT_EQ(Slurp(dir_ + "/moved/last.txt"), "answer");
}

}  // namespace
}  // namespace ae
