// apply_patch against a process that swaps a workspace directory for a symlink while patches
// are applied (what a process left running by an earlier confined command can do). agentexec
// writes outside the sandbox, so only its own resolver stands between the patch and the
// host: no write may land outside the writable roots or in .git/hooks. The negative control
// runs the same swapper against a check-then-open of the path string, which it defeats.
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "engine/tools/apply_patch/tool.h"
#include "sandbox/confined_fs.h"
#include "tool_fixture.h"

namespace ae::testing {
namespace {

namespace fs = std::filesystem;

class ApplyPatchRaceTest : public ToolTest {
 protected:
  void SetUp() override {
    ToolTest::SetUp();
    if (!sandbox::ConfinedFs::Openat2Available()) GTEST_SKIP() << "openat2 is not available";
    fs::create_directories(Path("ws/.git/hooks"));
    fs::create_directories(Path("ws/d"));
    fs::create_directories(Path("outside"));
    ASSERT_EQ(::symlink(Path("outside").c_str(), Path("ws/to_outside").c_str()), 0);
    ASSERT_EQ(::symlink(Path("ws/.git/hooks").c_str(), Path("ws/to_hooks").c_str()), 0);
    ConfineTo("ws");
  }
  void TearDown() override {
    StopSwapper();
    ToolTest::TearDown();
  }

  // A plain background process exchanging ws/d atomically with a symlink to outside/ and
  // then with one to .git/hooks, forever: ws/d is always there, a directory or a symlink.
  void StartSwapper() {
    const std::string d = Path("ws/d"), a = Path("ws/to_outside"), h = Path("ws/to_hooks");
    swapper_ = ::fork();
    ASSERT_GE(swapper_, 0);
    if (swapper_ == 0) {
      for (;;) {
        for (const std::string* link : {&a, &h}) {
          ::syscall(SYS_renameat2, AT_FDCWD, d.c_str(), AT_FDCWD, link->c_str(), RENAME_EXCHANGE);
          ::syscall(SYS_renameat2, AT_FDCWD, d.c_str(), AT_FDCWD, link->c_str(), RENAME_EXCHANGE);
        }
      }
    }
  }
  void StopSwapper() {
    if (swapper_ > 0) {
      ::kill(swapper_, SIGKILL);
      ::waitpid(swapper_, nullptr, 0);
      swapper_ = -1;
    }
  }
  // Files in outside/ and .git/hooks/ other than the planted victims, plus victims gone.
  int Escapes(int victims) const {
    int n = 0;
    for (const char* dir : {"outside", "ws/.git/hooks"}) {
      for (const auto& e : fs::directory_iterator(Path(dir))) {
        if (e.path().filename().string().rfind("victim", 0) != 0) ++n;
      }
      for (int i = 0; i < victims; ++i) {
        if (!Exists(fmt::format("{}/victim{}.txt", dir, i))) ++n;
      }
    }
    return n;
  }

  pid_t swapper_ = -1;
  std::unique_ptr<ToolRouter> router_ = MakeDefaultRouter();
};

TEST_F(ApplyPatchRaceTest, ASwappedDirectoryNeverLeadsAWriteOutside) {
  constexpr int kPatches = 100;
  // Each patch deletes a victim that exists in the real directory and, under the same name,
  // outside and in .git/hooks: a delete that followed the symlink would remove one of those.
  for (int i = 0; i < kPatches; ++i) {
    for (const char* dir : {"ws/d", "outside", "ws/.git/hooks"}) {
      Write(fmt::format("{}/victim{}.txt", dir, i), "v\n");
    }
  }
  StartSwapper();
  int attempts = 0, applied = 0;
  for (int i = 0; i < kPatches; ++i) {
    ToolResult r = Call(*router_, "apply_patch",
                        fmt::format("*** Begin Patch\n*** Add File: d/new{}.txt\n+x\n*** Delete "
                                    "File: d/victim{}.txt\n*** End Patch",
                                    i, i),
                        true);
    ++attempts;
    if (r.success) ++applied;
  }
  StopSwapper();
  const int escapes = Escapes(kPatches);
  RecordProperty("attempts", attempts);
  RecordProperty("applied", applied);
  RecordProperty("escapes", escapes);
  std::printf("race: %d attempts, %d applied inside the workspace, %d escapes\n", attempts, applied,
              escapes);
  EXPECT_GE(attempts, kPatches);
  EXPECT_EQ(escapes, 0);
  // Whatever was applied is inside the workspace, in the real directory (wherever the swapper
  // left its name).
  int inside = 0;
  for (const auto& e : fs::recursive_directory_iterator(Path("ws"))) {
    if (e.path().filename().string().rfind("new", 0) == 0) ++inside;
  }
  EXPECT_EQ(inside, applied);
}

// The same swapper defeats a check of the path string followed by an open of the same string
// (the old way): the race is real, so the test above can fail.
TEST_F(ApplyPatchRaceTest, NegativeControlCheckThenOpenEscapes) {
  StartSwapper();
  int attempts = 0, escapes = 0;
  for (; attempts < 50000 && escapes == 0; ++attempts) {
    const std::string path = Path(fmt::format("ws/d/c{}.txt", attempts));
    if (!turn_.sandbox.CanWrite(path)) continue;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    escapes = Escapes(0);
  }
  StopSwapper();
  std::printf("negative control: %d attempts before the first escape (%d)\n", attempts, escapes);
  EXPECT_GT(escapes, 0) << "the swapper never won against check-then-open in " << attempts
                        << " attempts";
}

}  // namespace
}  // namespace ae::testing
