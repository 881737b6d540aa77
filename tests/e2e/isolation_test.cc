// What one run, step or batch task leaves behind must not reach the next: each run has its own
// /tmp (sandbox/private_tmp.h), shared by its commands and gone when it ends, and a batch task
// cannot reach what another task or batch itself keeps under /tmp. Each attack is shown getting
// through in its negative control: the host's /tmp shared (sandbox_workspace_write.shared_tmp,
// as before), the protection switched off, or no sandbox.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/agentexec_runner.h"
#include "tests/support/scratch_dir.h"

namespace ae::e2e {
namespace {

namespace fs = std::filesystem;

class IsolationTest : public ::testing::Test {
 protected:
  RunOutput Exec(const std::string& turns_json, std::vector<std::string> extra = {},
                 const std::map<std::string, std::string>& env = {}) {
    const std::string script = ws_.WriteFile("turns.json", turns_json);
    std::vector<std::string> args = ScriptedArgs(script, {"--json", "-s", "workspace-write"});
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("go");
    RunOptions options;
    options.cwd = ws_.repo();
    options.env = ws_.Env(env);
    RunOutput out = RunAgentexec(args, options);
    EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
    return out;
  }
  Workspace ws_;
};

std::string Turns(const std::vector<std::string>& commands) {
  std::string turns = R"({"turns":[)";
  for (const std::string& cmd : commands) {
    turns += R"({"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":")" +
             cmd + R"("}}]},)";
  }
  return turns + R"({"items":[{"type":"message","text":"Done."}]}]})";
}

// The aggregated output of each completed command, in order (JSON escapes as written).
std::vector<std::string> Outputs(const std::string& jsonl) {
  static const std::regex kDone(
      R"re("type":"item.completed","item":\{"id":"item_\d+","type":"command_execution","command":"(?:[^"\\]|\\.)*","aggregated_output":"((?:[^"\\]|\\.)*)")re");
  std::vector<std::string> found;
  for (auto it = std::sregex_iterator(jsonl.begin(), jsonl.end(), kDone);
       it != std::sregex_iterator(); ++it) {
    found.push_back((*it)[1]);
  }
  return found;
}

// A run's commands share its /tmp ($TMPDIR names it); the host's /tmp never sees what they
// leave there, the directory behind it is gone when the run ends, and the next run's /tmp
// starts empty. With the host's /tmp shared, the file reaches the next run: the leak this
// closes.
TEST_F(IsolationTest, ARunsTmpIsItsOwnAndGoneWhenItEnds) {
  const std::string marker = "ae-isolation-" + std::to_string(::getpid());
  RunOutput first = Exec(Turns({"echo one > /tmp/" + marker +
                                    " && echo $TMPDIR && grep -o 'agentexec-tmp-[A-Za-z0-9]*' "
                                    "/proc/self/mountinfo | head -1",
                                "cat /tmp/" + marker}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::vector<std::string> outputs = Outputs(first.out);
  ASSERT_EQ(outputs.size(), 2u) << first.out;
  const std::smatch dir = [&] {
    std::smatch m;
    std::regex_match(outputs[0], m, std::regex(R"(/tmp\\n(agentexec-tmp-\w+)\\n)"));
    return m;
  }();
  ASSERT_EQ(dir.size(), 2u) << outputs[0];
  EXPECT_EQ(outputs[1], "one\\n");
  EXPECT_FALSE(fs::exists("/tmp/" + marker));
  EXPECT_FALSE(fs::exists("/tmp/" + dir[1].str())) << "the run's /tmp outlived it";

  RunOutput next = Exec(Turns({"cat /tmp/" + marker + " 2>&1; echo $?"}));
  ASSERT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(Outputs(next.out),
            std::vector<std::string>{"cat: /tmp/" + marker + ": No such file or directory\\n1\\n"});

  // The negative control: the host's /tmp shared, as codex shares it.
  const std::vector<std::string> shared = {"-c", "sandbox_workspace_write.shared_tmp=true"};
  ASSERT_EQ(Exec(Turns({"echo one > /tmp/" + marker}), shared).exit_code, 0);
  RunOutput leaked = Exec(Turns({"cat /tmp/" + marker}), shared);
  fs::remove("/tmp/" + marker);
  EXPECT_EQ(Outputs(leaked.out), std::vector<std::string>{"one\\n"}) << leaked.out;
}

// Row 1 of the isolation issue: in `batch run --out /tmp/...` (the README's example) a task's
// command writes another task's clone (a hook, a source file) and batch's own results.jsonl.
// With each task's /tmp its own, all of it is out of reach; with the host's /tmp shared batch
// refuses to start (--out would be reachable); unconfined, the victim's branch carries the
// attacker's edit, which batch reports as the victim's work.
TEST_F(IsolationTest, ABatchTaskCannotWriteAnotherTasksCloneOrBatchsRecords) {
  test::ScratchDir tmp_out("ae-isolation-out", "/tmp");
  for (const char* name : {"attacker", "victim"}) {
    const std::string dir = ws_.root() + "/" + name;
    const std::string cmd = "git init -q '" + dir + "' && cd '" + dir +
                            "' && echo 'print(1)' > main.py && touch " + name +
                            ".txt && git add . && git -c user.name=t "
                            "-c user.email=t@example.com commit -qm init";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  // `victim_polls`: how many times (every 50 ms) the victim looks for the attacker's mark.
  auto run = [&](const std::string& out, const std::vector<std::string>& extra,
                 int victim_polls = 60) {
    const std::string victim = out + "/work/victim/repo";
    // The attacker waits for the victim's clone, then writes it; the victim waits (a bounded
    // while) for the attacker's mark in its clone, so both run at once.
    const std::string attack = "if [ -e attacker.txt ]; then for i in $(seq 600); do [ -d " +
                               victim + "/.git ] && break; sleep 0.05; done; echo evil > " +
                               victim + "/main.py; echo hook > " + victim +
                               "/.git/hooks/pre-push; echo '{}' > " + out +
                               "/results.jsonl; touch " + victim + "/marked; ls " + victim +
                               " >/dev/null; else for i in $(seq " + std::to_string(victim_polls) +
                               "); do [ -e marked ] && "
                               "break; sleep 0.05; done; fi; true";
    const std::string script = ws_.WriteFile(
        "batch-turns.json",
        R"({"turns":[{"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":")" +
            attack +
            R"(","yield_time_ms":30000}}]},{"items":[{"type":"message","text":"Done."}]}]})");
    const std::string manifest =
        // Neither task means to change its own repository: only whether one can change the
        // other's is under test.
        ws_.WriteFile("m.jsonl",
                      R"({"id":"attacker","repo":"attacker","prompt":"p","expect_change":false})"
                      "\n"
                      R"({"id":"victim","repo":"victim","prompt":"p","expect_change":false})"
                      "\n");
    std::vector<std::string> args{"batch",
                                  "run",
                                  manifest,
                                  "--out",
                                  out,
                                  "-j",
                                  "2",
                                  "-s",
                                  "workspace-write",
                                  "-c",
                                  "model_provider=scripted",
                                  "-c",
                                  "model_providers.scripted.script=\"" + script + "\""};
    args.insert(args.end(), extra.begin(), extra.end());
    RunOptions options;
    options.cwd = ws_.root();
    options.env = ws_.Env();
    return RunAgentexec(args, options);
  };

  const std::string held = tmp_out.path() + "/held";
  RunOutput out = run(held, {});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(Slurp(held + "/work/victim/repo/main.py"), "print(1)\n");
  EXPECT_FALSE(fs::exists(held + "/work/victim/repo/.git/hooks/pre-push"));
  EXPECT_EQ(Slurp(held + "/tasks/victim/changes.patch"), "");
  EXPECT_NE(Slurp(held + "/results.jsonl").find(R"({"id":"victim","status":"succeeded",)"),
            std::string::npos);
  EXPECT_NE(Slurp(held + "/tasks/attacker/events.jsonl").find("Read-only file system"),
            std::string::npos);

  // With the host's /tmp shared, --out under it is reachable from every task: batch refuses
  // to start, naming the root.
  const std::string shared = tmp_out.path() + "/shared";
  out = run(shared, {"-c", "sandbox_workspace_write.shared_tmp=true"});
  EXPECT_EQ(out.exit_code, 2) << out.err;
  EXPECT_EQ(out.err, "error: --out " + shared +
                         " is reachable from the tasks' commands (a task with these options may "
                         "write /tmp): choose a directory outside it, or leave it out of "
                         "writable_roots, --add-dir and shared_tmp\n");
  EXPECT_FALSE(fs::exists(shared + "/work/victim"));

  // The negative control: unconfined tasks, which isolate nothing by the user's choice.
  const std::string leaked = tmp_out.path() + "/unconfined";
  // The victim waits for the mark as long as a loaded machine may need: unconfined, it comes.
  out = run(leaked, {"-s", "danger-full-access"}, 600);
  EXPECT_NE(Slurp(leaked + "/tasks/victim/changes.patch").find("+evil"), std::string::npos)
      << "unconfined, the attack should get through: the test proves nothing";
}

// Row 2: a command creates the project config of agentexec or codex where none exists; the
// next run in the workspace (a later pipeline step) would read it. Both names are made empty
// and read-only before the first command, and removed again after the run: the next run finds
// nothing and starts normally.
TEST_F(IsolationTest, ACommandCannotCreateAProjectConfigForTheNextRun) {
  RunOutput out =
      Exec(Turns({"mkdir -p .agentexec .codex; echo 'broken [' > "
                  ".agentexec/config.toml; echo 'broken [' > .codex/config.toml; "
                  "ls -d .agentexec .codex"}));
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(Outputs(out.out),
            std::vector<std::string>{
                "/bin/bash: line 1: .agentexec/config.toml: Read-only file system\\n/bin/bash: "
                "line 1: .codex/config.toml: Read-only file system\\n.agentexec\\n.codex\\n"});
  EXPECT_FALSE(fs::exists(ws_.repo() + "/.agentexec"));
  EXPECT_FALSE(fs::exists(ws_.repo() + "/.codex"));
  RunOutput next = Exec(R"({"turns":[{"items":[{"type":"message","text":"Hi."}]}]})");
  EXPECT_EQ(next.exit_code, 0) << next.err;
}

// Row 3: the agentexec home does not exist yet and lies inside the workspace; a command makes
// it with an MCP server in config.toml, which the next run would start unconfined. agentexec
// makes the home (0700) before the first command, read-only to commands, and keeps it.
TEST_F(IsolationTest, ACommandCannotCreateTheHomeWhereNoneExistsYet) {
  const std::string home = ws_.repo() + "/.agx-home";
  const std::string script = ws_.WriteFile(
      "turns.json", Turns({"mkdir -p .agx-home; printf '[mcp_servers.evil]\\\\ncommand = "
                           "\\\"touch\\\"\\\\n' > .agx-home/config.toml; echo $?"}));
  RunOptions options;
  options.cwd = ws_.repo();
  options.env = ws_.Env({{"AGENTEXEC_HOME", home}});
  RunOutput out = RunAgentexec(
      ScriptedArgs(script, {"--json", "--ephemeral", "-s", "workspace-write", "go"}), options);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(Outputs(out.out),
            std::vector<std::string>{
                "/bin/bash: line 1: .agx-home/config.toml: Read-only file system\\n1\\n"});
  struct stat st {};
  ASSERT_EQ(::stat(home.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_FALSE(fs::exists(home + "/config.toml"));
}

// Row 4: files other tools run without asking (an editor's tasks, another agent's hooks,
// direnv, a shell's start-up file in a home inside the workspace) cannot be created or changed;
// the placeholders made for them are gone after the run. With the list emptied
// (protected_paths = []), the negative control, each gets through.
TEST_F(IsolationTest, OtherToolsAutoRunFilesAreReadOnly) {
  const std::string attack =
      "mkdir -p .vscode .claude; echo '{}' > .vscode/tasks.json; echo '{}' > "
      ".claude/settings.json; echo 'curl x' > .envrc; echo 'curl x' >> home/.bashrc; true";
  ASSERT_EQ(std::system(("mkdir -p '" + ws_.repo() + "/home'").c_str()), 0);
  const std::map<std::string, std::string> home = {{"HOME", ws_.repo() + "/home"}};
  auto run = [&](std::vector<std::string> extra) { return Exec(Turns({attack}), extra, home); };
  RunOutput out = run({});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  for (const char* planted : {".vscode/tasks.json", ".claude/settings.json", "home/.bashrc"}) {
    EXPECT_FALSE(fs::exists(ws_.repo() + "/" + planted)) << planted;
  }
  for (const char* placeholder : {".vscode", ".claude", ".idea", ".envrc"}) {
    EXPECT_FALSE(fs::exists(ws_.repo() + "/" + placeholder)) << placeholder;
  }
  out = run({"-c", "sandbox_workspace_write.protected_paths=[]"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(Slurp(ws_.repo() + "/.vscode/tasks.json"), "{}\n");
  EXPECT_EQ(Slurp(ws_.repo() + "/.claude/settings.json"), "{}\n");
  EXPECT_EQ(Slurp(ws_.repo() + "/.envrc"), "curl x\n");
  EXPECT_EQ(Slurp(ws_.repo() + "/home/.bashrc"), "curl x\n");
}

// --print-writable-roots: what the CI wrappers keep their own files out of. The run's own /tmp
// is not listed (each run makes it afresh); the host's /tmp and $TMPDIR are, with shared_tmp.
TEST_F(IsolationTest, PrintWritableRootsSaysWhatARunsCommandsCouldWrite) {
  const std::string extra = ws_.root() + "/extra";
  ASSERT_TRUE(fs::create_directories(extra));
  const std::string tmpdir = ws_.root() + "/tmpdir";
  ASSERT_TRUE(fs::create_directories(tmpdir));
  RunOptions options;
  options.cwd = ws_.repo();
  options.env = ws_.Env({{"TMPDIR", tmpdir}});
  const std::string repo = fs::canonical(ws_.repo()).string();
  const std::string canonical_extra = fs::canonical(extra).string();
  RunOutput out = RunAgentexec(
      {"--print-writable-roots", "-s", "workspace-write", "--add-dir", extra}, options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, repo + "\n" + canonical_extra + "\n");
  out = RunAgentexec({"sandbox", "--print-writable-roots", "-s", "workspace-write", "-c",
                      "sandbox_workspace_write.shared_tmp=true"},
                     options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, repo + "\n/tmp\n" + fs::canonical(tmpdir).string() + "\n");
  out = RunAgentexec({"--print-writable-roots", "-s", "read-only"}, options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, "");
  out = RunAgentexec({"--print-writable-roots", "-s", "danger-full-access"}, options);
  EXPECT_EQ(out.out, "/\n");
}

// Every read-only path is held by identity, with no count limit: past the open-file limit the
// run fails closed (exit 3), saying which limit, instead of leaving the rest protected by path
// only (a command could rename a directory above one and plant a fresh `.git` at its path).
TEST_F(IsolationTest, CarveoutsPastTheOpenFileLimitFailClosed) {
  std::string make = "cd '" + ws_.repo() + "'";
  for (int i = 0; i < 120; ++i) make += " && mkdir -p sub" + std::to_string(i) + "/.git";
  ASSERT_EQ(std::system(make.c_str()), 0);
  RunOptions options;
  options.cwd = ws_.repo();
  options.env = ws_.Env();
  options.wrapper = {"/bin/sh", "-c", "ulimit -n 80 && exec \"$@\"", "sh"};
  RunOutput out = RunAgentexec({"sandbox", "-s", "workspace-write", "--", "true"}, options);
  EXPECT_EQ(out.exit_code, 3) << out.err;
  EXPECT_NE(out.err.find("read-only paths are held open, one descriptor each, and the open-file "
                         "limit is reached (Too many open files)"),
            std::string::npos)
      << out.err;
  EXPECT_NE(out.err.find("raise the open-file limit (ulimit -n, now 80) and run again"),
            std::string::npos)
      << out.err;
}

}  // namespace
}  // namespace ae::e2e
