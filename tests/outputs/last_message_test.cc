#include "outputs/last_message.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

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
  ASSERT_TRUE(PrepareOutputFile(path).ok());
  EXPECT_TRUE(fs::is_directory(dir_ + "/a/b"));
  EXPECT_FALSE(fs::exists(path));  // the probe leaves nothing behind
  ASSERT_TRUE(WriteOutputFile(path, "answer").ok());
  EXPECT_EQ(Slurp(path), "answer");
}

TEST_F(LastMessageTest, PrepareRejectsADirectory) {
  Status s = PrepareOutputFile(dir_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--output-last-message '" + dir_ + "' is a directory");
}

TEST_F(LastMessageTest, PrepareRejectsAPathUnderAFile) {
  std::string file = dir_ + "/plain";
  std::ofstream(file) << "x";
  Status s = PrepareOutputFile(file + "/out.txt");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot create directory '" + file + "'"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace ae
