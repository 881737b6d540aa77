// Unified exec through the router with real processes: a command outliving its yield becomes
// a session that write_stdin polls and feeds, a tty is a real terminal, the turn's end (and
// cancellation, and the bound) kill whole trees, and require_escalated runs nothing. The
// exact texts are codex's.
#include <dirent.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include "engine/tools/unified_exec.h"
#include "sandbox/policy.h"
#include "sandbox/prepared.h"
#include "tests/support/processes.h"
#include "tool_fixture.h"

namespace ae::testing {
namespace {

using namespace std::chrono_literals;
using test::AllGone;
using test::Appears;
using test::ProcessesWith;
using test::RealPython;

// A per-test number for process markers, so parallel runs never see each other's processes.
std::string Marker(int base) {
  return std::to_string(base * 1000 + (::getpid() % 1000)) + ".5";
}

class UnifiedExecTest : public ToolTest {
 protected:
  std::unique_ptr<ToolRouter> router_ = MakeDefaultRouter();
};

TEST_F(UnifiedExecTest, ARunningCommandBecomesASessionPolledUntilItExits) {
  ToolResult r = Call(*router_, "exec_command",
                      Cmd("echo one; sleep 1.5; echo two", ",\"yield_time_ms\":700"));
  EXPECT_TRUE(r.success);
  EXPECT_EQ(Stable(r.output),
            "Chunk ID: ID\nWall time: T seconds\nProcess running with session ID 1000\n"
            "Original token count: 1\nOutput:\none\n");
  // An empty poll waits for the exit (at most its yield) and says how it ended.
  r = Call(*router_, "write_stdin", R"({"session_id":1000,"chars":""})");
  EXPECT_EQ(Stable(r.output),
            "Chunk ID: ID\nWall time: T seconds\nProcess exited with code 0\n"
            "Original token count: 1\nOutput:\ntwo\n");
  r = Call(*router_, "write_stdin", R"({"session_id":1000})");
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.output, "write_stdin failed: Unknown process id 1000");

  EXPECT_EQ(Trace(), (std::vector<std::string>{"started item_0 command_execution",
                                               "updated item_0 command_execution",
                                               "completed item_0 command_execution"}));
  const auto& item = Completed<CommandExecutionItem>();
  EXPECT_EQ(item.aggregated_output, "one\ntwo\n");
  EXPECT_EQ(item.exit_code, 0);
  EXPECT_EQ(item.status, ItemStatus::kCompleted);
}

TEST_F(UnifiedExecTest, ACommandEndingBeforeItsYieldAnswersAtOnceWithoutASession) {
  ToolResult r = Call(*router_, "exec_command", Cmd("echo hi; exit 3"));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(Stable(r.output),
            "Chunk ID: ID\nWall time: T seconds\nProcess exited with code 3\n"
            "Original token count: 1\nOutput:\nhi\n");
  EXPECT_EQ(Call(*router_, "write_stdin", R"({"session_id":1000})").output,
            "write_stdin failed: Unknown process id 1000");
}

TEST_F(UnifiedExecTest, APipeSessionHasNoStdinAsCodexSays) {
  const std::string m = Marker(101);
  ToolResult r = Call(*router_, "exec_command", Cmd("sleep " + m, ",\"yield_time_ms\":250"));
  ASSERT_NE(r.output.find("Process running with session ID 1000"), std::string::npos) << r.output;
  r = Call(*router_, "write_stdin", R"({"session_id":1000,"chars":"x\n"})");
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.output,
            "write_stdin failed: stdin is closed for this session; rerun exec_command with "
            "tty=true to keep stdin open");
  router_->StopBackground(emitter_);
  EXPECT_TRUE(AllGone(m));
}

TEST_F(UnifiedExecTest, BadWriteStdinArgumentsAreRefused) {
  EXPECT_EQ(Call(*router_, "write_stdin", "{}").output,
            "failed to parse function arguments: missing field `session_id`");
  EXPECT_EQ(Call(*router_, "write_stdin", R"({"session_id":"x"})").output,
            "failed to parse function arguments: `session_id` must be a whole number");
  EXPECT_EQ(Call(*router_, "write_stdin", R"({"session_id":1000,"chars":5})").output,
            "failed to parse function arguments: `chars` must be a string");
  EXPECT_EQ(Call(*router_, "write_stdin", R"({"session_id":1e300})").output,
            "failed to parse function arguments: `session_id` must be a whole number");
  EXPECT_EQ(Call(*router_, "write_stdin", R"({"session_id":-7})").output,
            "write_stdin failed: Unknown process id -7");
  EXPECT_TRUE(sink_.events.empty());
}

TEST_F(UnifiedExecTest, TtyIsARealTerminalOfItsOwnWithItsSize) {
  ToolResult r = Call(*router_, "exec_command",
                      Cmd("test -t 0 && test -t 1 && test -t 2 && stty size && "
                          "exec 3</dev/tty && echo controlling",
                          ",\"tty\":true"));
  EXPECT_TRUE(r.success) << r.output;
  // The terminal's own output: its line discipline turns \n into \r\n.
  EXPECT_TRUE(r.output.ends_with("Output:\n24 80\r\ncontrolling\r\n")) << r.output;
  // Without tty the same descriptors are not terminals.
  r = Call(*router_, "exec_command", Cmd("test -t 1"));
  EXPECT_NE(r.output.find("Process exited with code 1"), std::string::npos) << r.output;
}

// What codex sets for exec_command sessions, on a terminal or not; the shell tool keeps the
// policy's environment as it is.
TEST_F(UnifiedExecTest, SessionsSeeNoColourNoPagerAndUtf8) {
  const std::string show =
      "echo \"$TERM $NO_COLOR [$COLORTERM] $PAGER $GIT_PAGER $GH_PAGER $LANG $LC_CTYPE $LC_ALL "
      "$CODEX_CI\"";
  ToolResult r = Call(*router_, "exec_command", Cmd(show));
  EXPECT_TRUE(r.output.ends_with("Output:\ndumb 1 [] cat cat cat C.UTF-8 C.UTF-8 C.UTF-8 1\n"))
      << r.output;
  r = Call(*router_, "exec_command", Cmd(show, ",\"tty\":true"));
  EXPECT_TRUE(r.output.ends_with("Output:\ndumb 1 [] cat cat cat C.UTF-8 C.UTF-8 C.UTF-8 1\r\n"))
      << r.output;
  r = Call(*router_, "shell", R"({"command":["bash","-c","echo \"[$CODEX_CI] [$GH_PAGER]\""]})");
  EXPECT_TRUE(r.output.ends_with("[] []\n")) << r.output;
}

TEST_F(UnifiedExecTest, WriteStdinFeedsAnInteractivePython) {
  const std::string python = RealPython();
  if (python.empty()) GTEST_SKIP() << "no python3";
  ToolResult r = Call(*router_, "exec_command",
                      Cmd(python + " -q -i", ",\"tty\":true,\"yield_time_ms\":3000"));
  ASSERT_NE(r.output.find("Process running with session ID 1000"), std::string::npos) << r.output;
  EXPECT_TRUE(r.output.ends_with("Output:\n>>> ")) << r.output;
  r = Call(*router_, "write_stdin",
           R"({"session_id":1000,"chars":"print(6*7)\n","yield_time_ms":1500})");
  EXPECT_TRUE(r.output.ends_with("Output:\nprint(6*7)\r\n42\r\n>>> ")) << r.output;
  r = Call(*router_, "write_stdin",
           R"({"session_id":1000,"chars":"exit()\n","yield_time_ms":5000})");
  EXPECT_NE(r.output.find("Process exited with code 0\n"), std::string::npos) << r.output;
  EXPECT_EQ(Completed<CommandExecutionItem>().exit_code, 0);
}

TEST_F(UnifiedExecTest, TheTurnsEndKillsEveryTreeAndCompletesTheItem) {
  const std::string m = Marker(102);
  ToolResult r =
      Call(*router_, "exec_command",
           Cmd("sleep " + m + " & sleep " + m + " & echo up; wait", ",\"yield_time_ms\":500"));
  ASSERT_NE(r.output.find("Process running with session ID 1000"), std::string::npos) << r.output;
  ASSERT_TRUE(Appears(m, 2));
  router_->StopBackground(emitter_);
  EXPECT_TRUE(AllGone(m)) << "a process of the session outlived the turn";
  const auto& item = Completed<CommandExecutionItem>();
  EXPECT_EQ(item.exit_code, 137);
  EXPECT_EQ(item.status, ItemStatus::kFailed);
  EXPECT_EQ(item.aggregated_output, "up\n");
  EXPECT_EQ(Call(*router_, "write_stdin", R"({"session_id":1000})").output,
            "write_stdin failed: Unknown process id 1000");
}

TEST_F(UnifiedExecTest, CancellationKillsTheSessions) {
  const std::string m = Marker(103);
  ToolResult r =
      Call(*router_, "exec_command", Cmd("sleep " + m + "; echo never", ",\"yield_time_ms\":300"));
  ASSERT_NE(r.output.find("Process running with session ID 1000"), std::string::npos) << r.output;
  cancel_.Cancel(CancelReason::kSigterm);
  EXPECT_TRUE(AllGone(m));
  // Once the run is cancelled the router starts no call at all.
  r = Call(*router_, "write_stdin", R"({"session_id":1000})");
  EXPECT_EQ(r.output, kNotStartedOutput);
  EXPECT_FALSE(r.success);
}

TEST_F(UnifiedExecTest, TimeoutMsEndsABackgroundSession) {
  ToolResult r = Call(*router_, "exec_command",
                      Cmd("echo a; sleep 30", ",\"yield_time_ms\":250,\"timeout_ms\":800"));
  ASSERT_NE(r.output.find("Process running with session ID 1000"), std::string::npos) << r.output;
  r = Call(*router_, "write_stdin", R"({"session_id":1000})");
  EXPECT_NE(r.output.find("Process exited with code 124\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("command timed out after"), std::string::npos) << r.output;
}

TEST_F(UnifiedExecTest, SessionsAreBoundedAndTheLeastRecentlyUsedIsKilled) {
  const std::string m = Marker(104);
  auto manager = std::make_shared<UnifiedExec>(2);
  ToolRouter router;
  router.Register(MakeWriteStdinTool(manager));
  Orchestrator orch(turn_, prepared_);
  ToolEnv env{turn_, emitter_, cancel_, orch};
  for (int i = 0; i < 3; ++i) {
    UnifiedExecRequest req;
    req.command.argv = {"/bin/sh", "-c", "exec sleep " + m};
    req.command.workdir = root_;
    req.command.display = "sleep";
    req.yield_ms = 250;
    auto reply = manager->Exec(req, env);
    ASSERT_TRUE(reply.ok()) << reply.message();
    EXPECT_NE(reply->text.find("Process running with session ID " + std::to_string(1000 + i)),
              std::string::npos)
        << reply->text;
    // codex warns at 60 of 64 open; of 2, at 2.
    EXPECT_EQ(reply->model_warning,
              i == 0 ? ""
                     : "The maximum number of unified exec processes you can keep open is 2 and "
                       "you currently have 2 processes open. Reuse older processes or close them "
                       "to prevent automatic pruning of old processes");
  }
  EXPECT_EQ(manager->session_count(), 2u);
  EXPECT_EQ(Call(router, "write_stdin", R"({"session_id":1000})").output,
            "write_stdin failed: Unknown process id 1000");
  // The pruned one is killed: two sleeps remain, and its item completed.
  for (int i = 0; i < 100 && ProcessesWith(m).size() > 2; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(ProcessesWith(m).size(), 2u);
  EXPECT_EQ(Completed<CommandExecutionItem>().exit_code, 137);
  manager->StopAll();
  EXPECT_TRUE(AllGone(m));
}

TEST_F(UnifiedExecTest, RequireEscalatedRunsNothingUnderNeverOrOnFailure) {
  for (ApprovalPolicy policy : {ApprovalPolicy::kNever, ApprovalPolicy::kOnFailure}) {
    turn_.approval = policy;
    const std::string name = policy == ApprovalPolicy::kNever ? "Never" : "OnFailure";
    const std::string refusal = "approval policy is " + name +
                                "; reject command \u2014 you cannot ask for escalated permissions "
                                "if the approval policy is " +
                                name;
    ToolResult r = Call(*router_, "exec_command",
                        Cmd("touch marker",
                            ",\"sandbox_permissions\":\"require_escalated\","
                            "\"justification\":\"needs it\""));
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.output, refusal);
    r = Call(*router_, "shell",
             R"({"command":["touch","marker"],"sandbox_permissions":"require_escalated"})");
    EXPECT_EQ(r.output, refusal);
    EXPECT_FALSE(Exists("marker"));
  }
  EXPECT_TRUE(sink_.events.empty());
  // use_default runs as usual; anything else is an argument error.
  ToolResult r = Call(*router_, "exec_command",
                      Cmd("touch marker", ",\"sandbox_permissions\":\"use_default\""));
  EXPECT_TRUE(r.success) << r.output;
  EXPECT_TRUE(Exists("marker"));
  r = Call(*router_, "exec_command", Cmd("true", ",\"sandbox_permissions\":\"root\""));
  EXPECT_EQ(r.output,
            "failed to parse function arguments: unknown variant `root`, expected `use_default` "
            "or `require_escalated`");
}

// The same with the real sandbox: sessions and terminals are confined like any command, and
// the PID namespace takes daemons that left the group with the session.
class ConfinedUnifiedExecTest : public UnifiedExecTest {
 protected:
  void SetUp() override {
    UnifiedExecTest::SetUp();
    sandbox::Settings settings;
    settings.mode = sandbox::Mode::kWorkspaceWrite;
    auto policy = sandbox::BuildPolicy(settings, root_);
    ASSERT_TRUE(policy.ok()) << policy.message();
    auto prepared = sandbox::Prepare(*policy);
    if (!prepared.ok()) {
      GTEST_SKIP() << "workspace-write cannot be enforced here: " << prepared.message();
    }
    holder_ = std::move(prepared).value();
    turn_.sandbox = *policy;
    prepared_ = holder_.get();
  }
  sandbox::PreparedPtr holder_;
};

TEST_F(ConfinedUnifiedExecTest, ATerminalSessionIsConfinedAndItsDaemonsDieWithTheTurn) {
  if (sandbox::DescribePrepared(*holder_).find("pid namespace") == std::string::npos) {
    GTEST_SKIP() << "no PID namespace here: a daemon that leaves the group is a documented limit";
  }
  const std::string m = Marker(105);
  ToolResult r = Call(*router_, "exec_command",
                      Cmd("test -t 1 && echo tty; touch /etc/ae-uexec-denied 2>/dev/null || "
                          "echo denied; setsid sleep " +
                              m + " & sleep " + m,
                          ",\"tty\":true,\"yield_time_ms\":700"));
  ASSERT_NE(r.output.find("Process running with session ID 1000"), std::string::npos) << r.output;
  EXPECT_TRUE(r.output.ends_with("Output:\ntty\r\ndenied\r\n")) << r.output;
  ASSERT_TRUE(Appears(m, 2));
  router_->StopBackground(emitter_);
  EXPECT_TRUE(AllGone(m)) << "a daemon of the session outlived the turn";
}

// Confined as unconfined: the fresh terminal is the command's controlling terminal (/dev/tty
// opens, and it is the same terminal as stdin) and its process group is the foreground one, so
// reading the terminal does not stop it.
TEST_F(ConfinedUnifiedExecTest, TheTerminalControlsTheCommandsSession) {
  ToolResult r = Call(*router_, "exec_command",
                      Cmd("exec 3</dev/tty && echo controlling; echo through-dev-tty >/dev/tty; "
                          "test \"$(ps -o tpgid= -p $$)\" = \"$(ps -o pgid= -p $$)\" && "
                          "echo foreground",
                          ",\"tty\":true"));
  EXPECT_TRUE(r.success) << r.output;
  EXPECT_TRUE(r.output.ends_with("Output:\ncontrolling\r\nthrough-dev-tty\r\nforeground\r\n"))
      << r.output;
}

TEST_F(ConfinedUnifiedExecTest, ControlCWrittenToTheTerminalEndsTheCommand) {
  const std::string m = Marker(106);
  ToolResult r =
      Call(*router_, "exec_command", Cmd("sleep " + m, ",\"tty\":true,\"yield_time_ms\":500"));
  ASSERT_NE(r.output.find("Process running with session ID 1000"), std::string::npos) << r.output;
  r = Call(*router_, "write_stdin", R"({"session_id":1000,"chars":"\u0003","yield_time_ms":5000})");
  EXPECT_NE(r.output.find("Process exited with code 130\n"), std::string::npos) << r.output;
  EXPECT_TRUE(r.output.ends_with("Output:\n^C")) << r.output;
  EXPECT_TRUE(AllGone(m));
}

}  // namespace
}  // namespace ae::testing
