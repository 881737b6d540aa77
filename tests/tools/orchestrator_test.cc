// The orchestrator's decisions with a fake process runner: what it hands the spawner, how a
// result becomes the item, and that on-failure reruns unconfined only on the write watch's
// evidence, never on the command's words.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/exec/orchestrator.h"
#include "sandbox/policy.h"
#include "tests/tools/tool_fixture.h"

namespace ae::testing {
namespace {

struct Attempted {
  sandbox::SpawnSpec spec;
  sandbox::RunLimits limits;
};

class OrchestratorTest : public ToolTest {
 protected:
  // Each attempt gets the next of `results`; what it was asked to run is kept in `calls`.
  ProcessRunner Fake() {
    return [this](const sandbox::SpawnSpec& spec, const sandbox::RunLimits& limits,
                  CancelToken&) -> Result<sandbox::RunResult> {
      calls.push_back(Attempted{spec, limits});
      if (results.empty()) return MakeError("fake: no result left");
      sandbox::RunResult r = results.front();
      results.erase(results.begin());
      return r;
    };
  }
  // workspace-write over root_/ws alone, really prepared (the fake never uses it, the
  // orchestrator only requires it).
  bool Confine() {
    std::filesystem::create_directories(root_ + "/ws");
    sandbox::Settings settings;
    settings.mode = sandbox::Mode::kWorkspaceWrite;
    // root_ lies in /tmp: without it and $TMPDIR, root_/out is outside the writable roots.
    settings.exclude_slash_tmp = true;
    settings.exclude_tmpdir_env_var = true;
    auto policy = sandbox::BuildPolicy(settings, root_ + "/ws");
    if (!policy.ok()) return false;
    auto prepared = sandbox::Prepare(*policy);
    if (!prepared.ok()) return false;
    holder_ = std::move(prepared).value();
    turn_.sandbox = *policy;
    turn_.cwd = root_ + "/ws";
    prepared_ = holder_.get();
    return true;
  }
  static sandbox::RunResult Failed(const std::string& output) {
    sandbox::RunResult r;
    r.exit_code = 1;
    r.output = output;
    r.total_bytes = output.size();
    r.total_lines = 1;
    return r;
  }
  // `touch outside` refused, and the write watch's record of it.
  static sandbox::RunResult WatchedRefusal(const std::string& outside) {
    sandbox::RunResult r = Failed("touch: cannot touch '" + outside + "': Permission denied\n");
    r.writes.watched = true;
    r.writes.refused = {outside};
    r.writes.refused_total = 1;
    return r;
  }
  CommandRequest Request() const {
    return CommandRequest{{"/bin/sh", "-c", "touch never-ran"}, turn_.cwd, 1234, "touch it"};
  }
  // Request() through an orchestrator over `prepared`, each attempt answered with the next of
  // `given`.
  Result<CommandOutcome> RunOnce(std::vector<sandbox::RunResult> given,
                                 const sandbox::PreparedSandbox* prepared) {
    results = std::move(given);
    Orchestrator orch(turn_, prepared, Fake());
    return orch.RunCommand(Request(), emitter_, cancel_);
  }

  std::vector<Attempted> calls;
  std::vector<sandbox::RunResult> results;
  sandbox::PreparedPtr holder_;
};

TEST_F(OrchestratorTest, TheRunnerGetsTheSettledSpecAndItsResultIsTheItem) {
  sandbox::RunResult r = Failed("fake out\n");
  r.exit_code = 3;
  auto outcome = RunOnce({r}, nullptr);
  ASSERT_TRUE(outcome.ok()) << outcome.message();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].spec.argv, (std::vector<std::string>{"/bin/sh", "-c", "touch never-ran"}));
  EXPECT_EQ(calls[0].spec.cwd, root_);
  EXPECT_EQ(calls[0].spec.sandbox, nullptr);
  EXPECT_EQ(calls[0].limits.timeout_ms, 1234);
  EXPECT_FALSE(Exists("never-ran"));  // nothing was spawned
  const auto& item = Completed<CommandExecutionItem>();
  EXPECT_EQ(item.aggregated_output, "fake out\n");
  EXPECT_EQ(item.exit_code, 3);
  EXPECT_EQ(item.status, ItemStatus::kFailed);
}

TEST_F(OrchestratorTest, TheCommandsWordsAloneNeverRerunIt) {
  if (!Confine()) GTEST_SKIP() << "workspace-write cannot be prepared here";
  turn_.approval = ApprovalPolicy::kOnFailure;
  sandbox::RunResult r = Failed("touch: cannot touch '" + root_ + "/out': Permission denied\n");
  r.writes.watched = true;  // the watch was in force and saw no refusal
  auto outcome = RunOnce({r}, prepared_);
  ASSERT_TRUE(outcome.ok()) << outcome.message();
  EXPECT_EQ(calls.size(), 1u);
  EXPECT_FALSE(outcome->escalated);
  EXPECT_FALSE(outcome->sandbox_denied);
}

TEST_F(OrchestratorTest, AWatchedRefusalRerunsItOnceUnconfined) {
  if (!Confine()) GTEST_SKIP() << "workspace-write cannot be prepared here";
  turn_.approval = ApprovalPolicy::kOnFailure;
  const std::string outside = root_ + "/out";
  sandbox::RunResult denied = WatchedRefusal(outside);
  sandbox::RunResult ok;
  auto outcome = RunOnce({denied, ok}, prepared_);
  ASSERT_TRUE(outcome.ok()) << outcome.message();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].spec.sandbox, prepared_);
  EXPECT_EQ(calls[1].spec.sandbox, nullptr);  // the rerun is unconfined
  EXPECT_EQ(calls[1].spec.env, calls[0].spec.env);
  EXPECT_TRUE(outcome->escalated);
  EXPECT_EQ(Completed<ErrorItem>().message,
            "command was denied by the sandbox (workspace-write: its write to " + outside +
                " was refused (outside the writable roots) and is allowed outside the sandbox); "
                "retrying it once outside the sandbox because approval_policy is on-failure: "
                "touch it");
}

// Under never nothing is rerun, so the command is not watched; the note still comes, from the
// output's own word, and says only what that word can carry.
TEST_F(OrchestratorTest, UnderNeverTheCommandIsNotWatchedAndTheNoteComesFromItsOutput) {
  if (!Confine()) GTEST_SKIP() << "workspace-write cannot be prepared here";
  std::filesystem::create_directories(root_ + "/out");
  turn_.approval = ApprovalPolicy::kNever;
  results = {Failed("touch: cannot touch '" + root_ + "/out/f': Permission denied\n"),
             Failed("PermissionError: [Errno 13] Permission denied\n")};
  Orchestrator orch(turn_, prepared_, Fake());
  auto named = orch.RunCommand(Request(), emitter_, cancel_);
  auto worded = orch.RunCommand(Request(), emitter_, cancel_);
  ASSERT_TRUE(named.ok()) << named.message();
  ASSERT_TRUE(worded.ok()) << worded.message();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].spec.sandbox, prepared_);
  EXPECT_FALSE(calls[0].spec.watch_writes);
  EXPECT_TRUE(named->sandbox_denied);
  ASSERT_TRUE(named->denial);
  EXPECT_FALSE(named->denial->verified);
  EXPECT_FALSE(named->denial->only_wording);
  EXPECT_TRUE(worded->sandbox_denied);
  EXPECT_TRUE(worded->denial->only_wording);
  EXPECT_FALSE(named->escalated || worded->escalated);
}

TEST_F(OrchestratorTest, UnderOnFailureTheConfinedCommandIsWatchedAndTheRerunIsNot) {
  if (!Confine()) GTEST_SKIP() << "workspace-write cannot be prepared here";
  turn_.approval = ApprovalPolicy::kOnFailure;
  const std::string outside = root_ + "/out";
  sandbox::RunResult denied = WatchedRefusal(outside);
  auto outcome = RunOnce({denied, sandbox::RunResult{}}, prepared_);
  ASSERT_TRUE(outcome.ok()) << outcome.message();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_TRUE(calls[0].spec.watch_writes);
  EXPECT_FALSE(calls[1].spec.watch_writes);  // unconfined: nothing to watch
  EXPECT_TRUE(outcome->escalated);
}

// The watch was wanted but not in force (a kernel without it): the output's word gives the
// note, never a rerun.
TEST_F(OrchestratorTest, WithoutTheWatchTheOutputsWordNeverRerunsIt) {
  if (!Confine()) GTEST_SKIP() << "workspace-write cannot be prepared here";
  std::filesystem::create_directories(root_ + "/out");
  turn_.approval = ApprovalPolicy::kOnFailure;
  sandbox::RunResult r = Failed("touch: cannot touch '" + root_ + "/out/f': Permission denied\n");
  r.writes.unavailable = "Linux 5.4 cannot let a notified call continue (needs 5.5)";
  auto outcome = RunOnce({r}, prepared_);
  ASSERT_TRUE(outcome.ok()) << outcome.message();
  EXPECT_EQ(calls.size(), 1u);
  EXPECT_FALSE(outcome->escalated);
  EXPECT_TRUE(outcome->sandbox_denied);
  EXPECT_FALSE(outcome->denial->verified);
  EXPECT_EQ(Completed<ErrorItem>().message,
            "command failed and may have been denied by the sandbox, but it is not retried outside "
            "it: agentexec could not observe the sandbox's refusals in this run (Linux 5.4 cannot "
            "let a notified call continue (needs 5.5))");
}

}  // namespace
}  // namespace ae::testing
