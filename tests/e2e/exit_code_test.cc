// Every exit code that the runner itself decides, with its message.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "base/fd.h"
#include "tests/support/agentexec_runner.h"
#include "tests/support/turn_lines.h"

namespace ae::e2e {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLoop = R"({"turns":[
  {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"true"}}]},
  {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"true"}}]},
  {"items":[{"type":"message","text":"done"}]}]})";

class ExitCodeTest : public ::testing::Test {
 protected:
  RunOutput Run(
      std::vector<std::string> args, RunOptions options = {},
      const std::string& turns = R"({"turns":[{"items":[{"type":"message","text":"ok"}]}]})") {
    if (options.cwd.empty()) options.cwd = ws_.repo();
    if (options.env.empty()) options.env = ws_.Env();
    return RunAgentexec(ScriptedArgs(ws_.WriteFile("turns.json", turns), args), options);
  }
  Workspace ws_;
};

TEST_F(ExitCodeTest, CompletedIs0AndVersionPrints) {
  EXPECT_EQ(Run({"--json", "hi"}).exit_code, 0);
  RunOutput v = RunAgentexec({"-V"}, {ws_.repo(), ws_.Env()});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out, "agentexec " AGENTEXEC_VERSION " (" AGENTEXEC_COMMIT ")\n");
  RunOutput h = RunAgentexec({"exec", "--help"}, {ws_.repo(), ws_.Env()});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--output-last-message"), std::string::npos);
}

TEST_F(ExitCodeTest, BadFlagIs2) {
  RunOutput out = Run({"--frobnicate", "hi"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_NE(out.err.find("--frobnicate"), std::string::npos) << out.err;
}

TEST_F(ExitCodeTest, BadConfigIs2WithFileAndLine) {
  ws_.WriteFile("agentexec-home/config.toml", "model = \"x\"\nmodle = \"y\"\n");
  RunOutput out = Run({"--strict-config", "hi"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.err.find("config.toml:2:1: unknown key 'modle' (did you mean 'model'?)"),
            std::string::npos)
      << out.err;
}

TEST_F(ExitCodeTest, UnknownKeyWarnsAsAnErrorItemBeforeTurnStarted) {
  ws_.WriteFile("agentexec-home/config.toml", "modle = \"y\"\n");
  RunOutput out = Run({"--json", "hi"});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> lines = out.lines();
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[1].find(R"("type":"error","message":")"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("unknown key 'modle' (did you mean 'model'?)"), std::string::npos);
  EXPECT_EQ(lines[2], R"({"type":"turn.started"})");
  EXPECT_NE(out.err.find("warning: "), std::string::npos);
}

// codex runs `-c approval_policy=on-request` (and untrusted); so do we, as `never`, with the
// warning a config file gets.
TEST_F(ExitCodeTest, InteractiveApprovalOverrideRunsAsNeverWithAWarning) {
  RunOutput out = Run({"--json", "-c", "approval_policy=on-request", "hi"});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  const std::string warning =
      "-c approval_policy=on-request: 'approval_policy' value 'on-request' needs someone to "
      "answer prompts, and agentexec is headless; using 'never'";
  std::vector<std::string> lines = out.lines();
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[1],
            R"({"type":"item.completed","item":{"id":"item_0","type":"error","message":")" +
                warning + R"("}})");
  EXPECT_EQ(lines[2], R"({"type":"turn.started"})");
  EXPECT_NE(out.err.find("warning: " + warning + "\n"), std::string::npos) << out.err;
}

TEST_F(ExitCodeTest, NotAGitRepositoryIs2WithCodexMessage) {
  RunOptions options;
  options.cwd = ws_.root();
  RunOutput out = Run({"--json", "hi"}, options);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(out.err,
            "error: Not inside a trusted directory and --skip-git-repo-check was not specified.\n");
  EXPECT_EQ(Run({"--json", "--skip-git-repo-check", "hi"}, options).exit_code, 0);
}

TEST_F(ExitCodeTest, EmptyPromptIs2) {
  RunOptions options;
  options.stdin_data = "  \n";
  RunOutput out = Run({"--json"}, options);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
}

TEST_F(ExitCodeTest, UnwritableOutputIs5BeforeTheTurn) {
  std::string file = ws_.WriteFile("plain-file", "x");
  RunOutput out = Run({"--json", "-o", file + "/last.txt", "hi"});
  EXPECT_EQ(out.exit_code, 5);
  EXPECT_EQ(out.out, "");  // nothing ran
  EXPECT_NE(out.err.find("cannot create directory '" + file + "'"), std::string::npos) << out.err;
}

TEST_F(ExitCodeTest, UnenforceableSandboxIs3AndRunsNothing) {
  RunOptions options;
  options.env = ws_.Env({{"AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK", "1"}});
  RunOutput out = Run({"--json", "-s", "workspace-write", "hi"}, options, kLoop);
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
  // Framed like every other failure: thread.started, turn.started, error,
  // turn.failed.
  std::vector<std::string> lines = out.lines();
  ASSERT_EQ(lines.size(), 4u) << out.out;
  EXPECT_EQ(lines[0].rfind(R"({"type":"thread.started","thread_id":")", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1], R"({"type":"turn.started"})");
  EXPECT_NE(
      lines[2].find(R"({"type":"error","message":"sandbox: cannot enforce workspace-write: )"),
      std::string::npos)
      << lines[2];
  EXPECT_EQ(
      lines[3].rfind(R"({"type":"turn.failed","error":{"message":"sandbox: cannot enforce )", 0),
      0u)
      << lines[3];
  EXPECT_NE(out.err.find("-s danger-full-access"), std::string::npos) << out.err;
  // The container-is-the-boundary escape hatch still works.
  EXPECT_EQ(Run({"--json", "-s", "danger-full-access", "hi"}, options).exit_code, 0);
}

TEST_F(ExitCodeTest, MaxTurnsIs4) {
  RunOutput out = Run({"--json", "--max-turns", "2", "loop"}, {}, kLoop);
  EXPECT_EQ(out.exit_code, 4);
  EXPECT_EQ(NormalizeThreadId(out.lines().back()),
            test::TurnFailedLine(
                "max turns reached: the model asked for more work after 2 requests (--max-turns 2)",
                "max_turns", {}, {}, 2));
}

TEST_F(ExitCodeTest, ScriptRunningOutIsATurnFailure) {
  RunOutput out = Run(
      {"--json", "loop"}, {},
      R"({"turns":[{"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"true"}}]}]})");
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(
      out.lines().back().find("scripted provider: no turn left for request 2 (script has 1 turns)"),
      std::string::npos)
      << out.out;
}

// --- output, durations, session files -------------------------------------------

std::string ManyCalls(int n, const std::string& cmd) {
  std::string items;
  for (int i = 0; i < n; ++i) {
    if (i > 0) items += ",";
    items +=
        R"({"type":"function_call","name":"exec_command","arguments":{"cmd":")" + cmd + R"("}})";
  }
  return R"({"turns":[{"items":[)" + items + R"(]},{"items":[{"type":"message","text":"done"}]}]})";
}

int CountLines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

TEST_F(ExitCodeTest, AClosedStdoutEndsTheRunWithExit5) {
  // `agentexec --json … | head -1`: the reader is gone after one line; the 200 commands the
  // model asked for must not all run for nobody.
  std::string count = ws_.root() + "/count";
  RunOptions options;
  options.wrapper = {"/bin/bash", "-c", "\"$@\" | head -1; exit ${PIPESTATUS[0]}", "pipeline"};
  RunOutput out = Run({"--json", "-s", "danger-full-access", "go"}, options,
                      ManyCalls(200, "sleep 0.05; echo x >> " + count));
  EXPECT_EQ(out.exit_code, 5) << out.err;
  EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
  ASSERT_EQ(out.lines().size(), 1u) << out.out;
  EXPECT_EQ(out.lines()[0].rfind(R"({"type":"thread.started")", 0), 0u);
  EXPECT_NE(out.err.find("error: cannot write events to stdout: Broken pipe"), std::string::npos)
      << out.err;
  EXPECT_LT(CountLines(count), 200);
}

TEST_F(ExitCodeTest, SigtermEndsARunWhoseStdoutReaderStoppedReading) {
  // stdout is a pipe nobody reads; 100 KB outputs fill it, so a write blocks. SIGTERM must
  // still end the run (and its 30 s command) with exit 143.
  std::string script = ws_.WriteFile(
      "turns.json", ManyCalls(2, "head -c 100000 /dev/zero | tr '\\\\0' x; sleep 30"));
  int out_pipe[2];
  ASSERT_EQ(::pipe2(out_pipe, O_CLOEXEC), 0);
  std::vector<std::string> args =
      ScriptedArgs(script, {"--json", "-s", "danger-full-access", "go"});
  args.insert(args.begin(), AGENTEXEC_BIN);
  std::map<std::string, std::string> env = ws_.Env();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out_pipe[1], 1);
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 2);
    if (::chdir(ws_.repo().c_str()) != 0) ::_exit(126);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (std::string& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  Fd reader(out_pipe[0]);
  // Let it fill the pipe (the outputs are written within ~a second of starting).
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ::kill(pid, SIGTERM);
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 150 && !exited; ++i) {  // a bounded wait: 15 s
    exited = ::waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(exited) << "SIGTERM did not end a run whose stdout was not being read";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 143);
  // What was written: whole JSON lines, and at most one line cut off where the reader stopped.
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(reader.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  std::string complete = out.substr(0, out.rfind('\n') + 1);
  EXPECT_EQ(CheckJsonLines(complete), "") << complete.substr(0, 500);
  EXPECT_EQ(complete.rfind(R"({"type":"thread.started")", 0), 0u);
}

TEST_F(ExitCodeTest, HugeAndHostileDurationsNeitherOverflowNorDisableLimits) {
  // --timeout 9999999h: no overflow (it used to fire at once, exit 4).
  RunOutput out = Run({"--json", "--timeout", "9999999h", "hi"});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;

  // The model cannot switch the 500 ms command timeout off or raise it: -1, 0, 9.2e18 and
  // 1e300 all keep it; each `sleep 5` is killed, none prints "slept".
  std::string items;
  for (const char* t : {"-1", "0", "9.2e18", "1e300"}) {
    if (!items.empty()) items += ",";
    items += std::string(R"({"type":"function_call","name":"exec_command","arguments":)") +
             R"({"cmd":"sleep 5; echo slept","timeout_ms":)" + t + "}}";
  }
  out = Run(
      {"--json", "-s", "danger-full-access", "-c", "command_timeout_ms=500", "go"}, {},
      R"({"turns":[{"items":[)" + items + R"(]},{"items":[{"type":"message","text":"done"}]}]})");
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
  EXPECT_EQ(out.out.find(R"(slept\n)"), std::string::npos) << out.out;  // output, not command
  size_t completed = 0;
  for (const std::string& line : out.lines()) {
    if (line.find(R"("type":"item.completed","item":{"id")") != std::string::npos &&
        line.find("command_execution") != std::string::npos) {
      ++completed;
      EXPECT_EQ(line.find(R"("exit_code":0)"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(completed, 4u) << out.out;
}

TEST_F(ExitCodeTest, ASessionFileOnAFullDiskIsReportedAndExit5) {
  if (std::system("unshare -m true >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs a mount namespace (unshare -m) to mount a tiny tmpfs";
  }
  std::string sessions = ws_.home() + "/sessions";
  std::filesystem::create_directories(sessions);
  RunOptions options;
  // 4 KiB of tmpfs: the session_meta line and instructions fit, a 10 KB prompt does not.
  options.wrapper = {"/usr/bin/unshare",
                     "-m",
                     "/bin/sh",
                     "-c",
                     "mount -t tmpfs -o size=4k none \"$0\" && exec \"$@\"",
                     sessions};
  const std::string prompt(10000, 'p');
  RunOutput out = Run({"--json", prompt}, options);
  EXPECT_EQ(out.exit_code, 5) << out.err;
  EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
  std::vector<std::string> lines = out.lines();
  int warnings = 0;
  for (const std::string& l : lines) {
    if (l.find(R"("type":"error","message":"cannot write session file ')") != std::string::npos &&
        l.find("No space left on device; this run cannot be resumed") != std::string::npos) {
      ++warnings;
    }
  }
  EXPECT_EQ(warnings, 1) << out.out;
  EXPECT_EQ(NormalizeThreadId(lines.back()), test::TurnCompletedLine({}, {}, 1));
  EXPECT_NE(out.err.find("warning: cannot write session file"), std::string::npos) << out.err;
  // --ephemeral writes nothing, so nothing is lost.
  EXPECT_EQ(Run({"--json", "--ephemeral", prompt}, options).exit_code, 0);
}

}  // namespace
}  // namespace ae::e2e
