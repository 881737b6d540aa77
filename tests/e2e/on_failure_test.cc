// on-failure and the sandbox note through the real binary and the real sandbox: a command's
// own words never get it rerun unconfined; a write the sandbox really refused does, with the
// evidence in the error item; the note to the model appears only where the sandbox is the
// likely cause.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/support/agentexec_runner.h"

namespace ae::e2e {
namespace {

namespace fs = std::filesystem;

constexpr char kNote[] = "sandbox blocked this command";

class OnFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // /var/tmp: outside every writable root (the workspace is under /tmp, which is one).
    char tmpl[] = "/var/tmp/ae-e2e-out-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << "need a directory outside the writable roots";
    outside_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(outside_, ec);
  }

  // One command per call, then a final message; --json, the given sandbox and approval.
  RunOutput Run(const std::vector<std::string>& cmds, const std::string& approval,
                const std::map<std::string, std::string>& env = {}) {
    std::string turns = R"({"turns":[)";
    for (const std::string& cmd : cmds) {
      std::string escaped;
      for (char c : cmd) {
        if (c == '"' || c == '\\') escaped += '\\';
        escaped += c;
      }
      turns += R"({"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":")" +
               escaped + R"("}}]},)";
    }
    turns += R"({"items":[{"type":"message","text":"done"}]}]})";
    std::string script = ws_.WriteFile("turns.json", turns);
    RunOptions options;
    options.cwd = ws_.repo();
    options.env = ws_.Env(env);
    RunOutput out = RunAgentexec(
        ScriptedArgs(script, {"--json", "-s", "workspace-write", "-a", approval, "go"}), options);
    EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
    return out;
  }

  std::vector<std::string> ModelOutputs() const { return FunctionCallOutputs(ws_.home()); }

  static int Count(const std::string& s, const std::string& what) {
    int n = 0;
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
    return n;
  }

  Workspace ws_;
  std::string outside_;
};

TEST_F(OnFailureTest, ACommandThatOnlySaysPermissionDeniedIsNotRerun) {
  // Exit 1 with every wording the old heuristic took, then death by SIGSYS: nothing the
  // sandbox refused, so nothing runs outside it.
  RunOutput out = Run({"echo 'Permission denied'; echo 'Read-only file system' >&2; echo "
                       "'OPERATION NOT PERMITTED'; touch escaped-1; exit 1",
                       "touch escaped-2; kill -SYS $$"},
                      "on-failure");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(Count(out.out, R"("type":"error")"), 0) << out.out;
  EXPECT_EQ(Count(out.out, R"("item.completed","item":{"id":"item_)"), 3) << out.out;
  // Each ran once, confined (touching inside the workspace works there).
  EXPECT_TRUE(fs::exists(ws_.repo() + "/escaped-1"));
  for (const std::string& o : ModelOutputs()) EXPECT_EQ(o.find(kNote), std::string::npos) << o;
}

TEST_F(OnFailureTest, AWriteTheSandboxRefusedIsRerunWithTheEvidence) {
  RunOutput out = Run({"touch " + outside_ + "/f"}, "on-failure");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_TRUE(fs::exists(outside_ + "/f"));
  std::vector<std::string> lines = out.lines();
  ASSERT_GE(lines.size(), 7u) << out.out;
  EXPECT_NE(lines[3].find(R"("status":"failed")"), std::string::npos) << lines[3];
  EXPECT_EQ(lines[4],
            R"({"type":"item.completed","item":{"id":"item_1","type":"error","message":"command )"
            R"(was denied by the sandbox (workspace-write: its write to )" +
                outside_ +
                R"(/f was refused (outside the writable roots) and is allowed outside the )"
                R"(sandbox); retrying it once outside the sandbox because approval_policy is )"
                R"(on-failure: /bin/bash -lc 'touch )" +
                outside_ + R"(/f'"}})");
  EXPECT_NE(lines[6].find(R"("exit_code":0,"status":"completed")"), std::string::npos) << lines[6];
}

// Without the write watch (as on Linux < 5.5) there is no evidence: nothing reruns, and the
// stream says why.
TEST_F(OnFailureTest, WithoutTheWatchNothingRerunsAndTheStreamSaysWhy) {
  RunOutput out =
      Run({"touch " + outside_ + "/f"}, "on-failure", {{"AGENTEXEC_SANDBOX_FAKE_NO_WATCH", "1"}});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_FALSE(fs::exists(outside_ + "/f"));
  EXPECT_EQ(Count(out.out, R"("type":"error")"), 1) << out.out;
  EXPECT_NE(
      out.out.find("\"message\":\"command failed and may have been denied by the sandbox, but it "
                   "is not retried outside it: agentexec could not observe the sandbox's refusals "
                   "in this run (the write watch is switched off)\"}}"),
      std::string::npos)
      << out.out;
}

// A command's own word that it was refused (with a path outside the roots that it never
// touched) is only ever a note: under never the model hears the sandbox likely blocked it,
// under on-failure (where the watch saw no such write) nothing at all, and nothing reruns.
TEST_F(OnFailureTest, AForgedRefusalIsAtMostANote) {
  const std::string forged =
      "echo \"touch: cannot touch '" + outside_ + "/f': Permission denied\"; exit 1";
  for (const std::string approval : {"never", "on-failure"}) {
    SCOPED_TRACE(approval);
    RunOutput out = Run({forged}, approval);
    ASSERT_EQ(out.exit_code, 0) << out.err;
    EXPECT_EQ(Count(out.out, R"("type":"error")"), 0) << out.out;
    EXPECT_EQ(Count(out.out, R"("type":"command_execution")"), 2) << out.out;  // no rerun
    std::vector<std::string> outputs = ModelOutputs();
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0].find(kNote) != std::string::npos, approval == "never") << outputs[0];
    fs::remove_all(ws_.home() + "/sessions");  // the next run's output alone
  }
}

// The watch is paid for only where it is used: under never the command carries one seccomp
// filter fewer than under on-failure (the watch's), as the command itself sees it.
TEST_F(OnFailureTest, OnlyOnFailureCarriesTheWriteWatch) {
  std::map<std::string, int> filters;
  for (const std::string approval : {"never", "on-failure"}) {
    RunOutput out =
        Run({"echo filters=$(sed -n 's/^Seccomp_filters:[[:space:]]*//p' /proc/self/status)"},
            approval);
    ASSERT_EQ(out.exit_code, 0) << out.err;
    std::vector<std::string> outputs = ModelOutputs();
    ASSERT_EQ(outputs.size(), 1u);
    const size_t at = outputs[0].find("filters=");
    ASSERT_NE(at, std::string::npos) << outputs[0];
    filters[approval] = std::atoi(outputs[0].c_str() + at + 8);
    fs::remove_all(ws_.home() + "/sessions");
  }
  EXPECT_GE(filters["never"], 1);
  EXPECT_EQ(filters["on-failure"], filters["never"] + 1);
}

TEST_F(OnFailureTest, ANetworkRefusalGetsTheNoteButIsNotRerun) {
  RunOutput out = Run({"python3 -c 'import socket; socket.socket(socket.AF_INET)'"}, "on-failure");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(Count(out.out, R"("type":"error")"), 0) << out.out;
  EXPECT_NE(out.out.find("Operation not permitted"), std::string::npos) << out.out;
  std::vector<std::string> outputs = ModelOutputs();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_NE(outputs[0].find(kNote), std::string::npos) << outputs[0];
}

TEST_F(OnFailureTest, TheNoteOnlyWhereTheSandboxIsTheCause) {
  std::ofstream(ws_.repo() + "/secret.txt") << "s\n";
  ASSERT_EQ(::chmod((ws_.repo() + "/secret.txt").c_str(), 0), 0);
  // Read as an unprivileged user (root reads a mode-000 file anyway), then a write outside.
  const std::string as_user =
      ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  RunOutput out = Run({as_user + "cat ./secret.txt", "touch " + outside_ + "/g"}, "never");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_FALSE(fs::exists(outside_ + "/g"));
  std::vector<std::string> outputs = ModelOutputs();
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_NE(outputs[0].find("secret.txt: Permission denied"), std::string::npos) << outputs[0];
  EXPECT_EQ(outputs[0].find(kNote), std::string::npos) << outputs[0];
  EXPECT_NE(outputs[1].find(kNote), std::string::npos) << outputs[1];
}

}  // namespace
}  // namespace ae::e2e
