// What one run, step or batch task leaves behind must not reach the next: each run has its own
// /tmp (sandbox/private_tmp.h), shared by its commands and gone when it ends, and a batch task
// cannot reach what another task or batch itself keeps under /tmp. Each attack is shown getting
// through with the host's /tmp shared (sandbox_workspace_write.shared_tmp, as before), its
// negative control.
#include <gtest/gtest.h>

#include <filesystem>
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
  RunOutput Exec(const std::string& turns_json, std::vector<std::string> extra = {}) {
    const std::string script = ws_.WriteFile("turns.json", turns_json);
    std::vector<std::string> args{"-c", "model_provider=scripted", "-c",
                                  "model_providers.scripted.script=\"" + script + "\"",
                                  "--json", "-s", "workspace-write"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("go");
    RunOptions options;
    options.cwd = ws_.repo();
    options.env = ws_.Env();
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
  RunOutput first = Exec(Turns(
      {"echo one > /tmp/" + marker + " && echo $TMPDIR && grep -o 'agentexec-tmp-[A-Za-z0-9]*' "
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
// With each task's /tmp its own, all of it is out of reach; with the host's /tmp shared the
// victim's branch carries the attacker's edit, which batch reports as the victim's work.
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
  auto run = [&](const std::string& out, const std::vector<std::string>& extra) {
    const std::string victim = out + "/work/victim/repo";
    // The attacker waits for the victim's clone, then writes it; the victim waits (a bounded
    // while) for the attacker's mark in its clone, so both run at once.
    const std::string attack =
        "if [ -e attacker.txt ]; then for i in $(seq 100); do [ -d " + victim +
        "/.git ] && break; sleep 0.05; done; echo evil > " + victim + "/main.py; echo hook > " +
        victim + "/.git/hooks/pre-push; echo '{}' > " + out + "/results.jsonl; touch " + victim +
        "/marked; ls " + victim + " >/dev/null; else for i in $(seq 60); do [ -e marked ] && "
        "break; sleep 0.05; done; fi; true";
    const std::string script = ws_.WriteFile(
        "batch-turns.json",
        R"({"turns":[{"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":")" +
            attack + R"(","yield_time_ms":30000}}]},{"items":[{"type":"message","text":"Done."}]}]})");
    const std::string manifest =
        ws_.WriteFile("m.jsonl", R"({"id":"attacker","repo":"attacker","prompt":"p"})"
                                 "\n"
                                 R"({"id":"victim","repo":"victim","prompt":"p"})"
                                 "\n");
    std::vector<std::string> args{"batch", "run", manifest, "--out", out, "-j", "2",
                                  "-s", "workspace-write", "-c", "model_provider=scripted",
                                  "-c", "model_providers.scripted.script=\"" + script + "\""};
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

  // The negative control: the host's /tmp shared by every task.
  const std::string leaked = tmp_out.path() + "/shared";
  out = run(leaked, {"-c", "sandbox_workspace_write.shared_tmp=true"});
  // (The victim's .git is held read-only there when its clone existed by the attacker's first
  // tool call, which is a race; its source files never are.)
  EXPECT_NE(Slurp(leaked + "/tasks/victim/changes.patch").find("+evil"), std::string::npos)
      << "with /tmp shared the attack should get through: the test proves nothing";
}

}  // namespace
}  // namespace ae::e2e
