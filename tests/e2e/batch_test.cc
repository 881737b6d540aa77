// `agentexec batch` through the real binary on the scripted provider: tasks in their own
// clones, the per-task files and records, a failing task among good ones, SIGTERM and
// --resume, --max-failures, shards merged into the same report, manifest errors, the report
// formats, and what a task's command can find of the credentials batch passes on.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>

#include "tests/support/agentexec_runner.h"
#include "tests/support/test_model_server.h"

namespace ae::e2e {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  return lines;
}

// The record of `id` in a results.jsonl text (the last one), with its duration replaced.
std::string RecordOf(const std::string& results, const std::string& id) {
  std::string found;
  for (const std::string& l : Lines(results)) {
    if (l.starts_with(R"({"id":")" + id + R"(",)")) found = l;
  }
  return std::regex_replace(found, std::regex(R"("duration_ms":\d+)"), R"("duration_ms":<ms>)");
}

std::string NoDurations(const std::string& text) {
  return std::regex_replace(text, std::regex(R"("duration_ms":\d+)"), R"("duration_ms":<ms>)");
}

// Each task adds new.txt and answers; a repository holding slow.txt first sleeps until the
// test creates the marker `go` (so SIGTERM can find it running).
std::string Turns(const std::string& root) {
  return R"({"turns":[
    {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"test -e slow.txt && ! test -e )" +
         root + R"(/go && sleep 30; true","yield_time_ms":30000,"login":false}}]},
    {"items":[{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch"}]},
    {"items":[{"type":"message","text":"Added new.txt.\nSecond line."}],
     "usage":{"input_tokens":100,"output_tokens":20}}]})";
}

class BatchTest : public ::testing::Test {
 protected:
  void SetUp() override { script_ = ws_.WriteFile("turns.json", Turns(ws_.root())); }

  // A git repository root()/name with one commit (and `extra` files).
  void MakeRepo(const std::string& name, const std::vector<std::string>& extra = {}) {
    const std::string dir = ws_.root() + "/" + name;
    std::string cmd = "git init -q '" + dir + "' && cd '" + dir + "' && echo hi > f.txt";
    for (const std::string& f : extra) cmd += " && echo x > " + f;
    cmd += " && git add . && git -c user.name=t -c user.email=t@example.com commit -qm init";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  RunOutput Batch(std::vector<std::string> args, RunOptions options = {}) {
    std::vector<std::string> full{"batch"};
    full.insert(full.end(), args.begin(), args.end());
    if (full.size() > 1 && full[1] == "run") {
      full.insert(full.end(), {"-s", "workspace-write", "-c", "model_provider=scripted", "-c",
                               "model_providers.scripted.script=\"" + script_ + "\""});
    }
    if (options.cwd.empty()) options.cwd = ws_.root();
    if (options.env.empty()) options.env = ws_.Env();
    return RunAgentexec(full, options);
  }

  std::string Out(const std::string& name = "out") { return ws_.root() + "/" + name; }

  // `report --format json` of Out() succeeds and holds `text`.
  void ExpectJsonReportHas(const std::string& text) {
    RunOutput report = Batch({"report", Out(), "--format", "json"});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    EXPECT_NE(report.out.find(text), std::string::npos) << report.out;
  }

  // Repositories alpha and beta, each a task under danger-full-access; the manifest's path.
  std::string TwoUnconfinedTasks() {
    MakeRepo("alpha");
    MakeRepo("beta");
    return ws_.WriteFile(
        "m.jsonl",
        R"({"id":"alpha","repo":"alpha","prompt":"p","sandbox":"danger-full-access","expect_change":false}
{"id":"beta","repo":"beta","prompt":"p","sandbox":"danger-full-access","expect_change":false}
)");
  }

  Workspace ws_;
  std::string script_;
};

constexpr const char* kThree =
    R"({"id":"alpha","repo":"alpha","prompt":"add a file"}
{"id":"beta","repo":"beta","prompt":"add a file","max_turns":1}
{"id":"gamma","repo":"gamma","prompt":"add a file"}
)";

TEST_F(BatchTest, ThreeReposTwoAtOnceOneFailsTheOthersGoOn) {
  for (const char* r : {"alpha", "beta", "gamma"}) MakeRepo(r);
  const std::string manifest = ws_.WriteFile("m.jsonl", kThree);
  RunOutput out = Batch({"run", manifest, "--out", Out(), "-j", "2"});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  EXPECT_EQ(out.out, "");
  EXPECT_NE(out.err.find("batch: 3/3 done, 0 running, 2 succeeded, 1 failed, 0 no_change, "
                         "0 interrupted, 0 skipped, 240 tokens\n"),
            std::string::npos)
      << out.err;

  const std::string results = Slurp(Out() + "/results.jsonl");
  EXPECT_EQ(Lines(results).size(), 3u) << results;
  EXPECT_EQ(RecordOf(results, "alpha"),
            R"({"id":"alpha","status":"succeeded","exit_code":0,"error_code":null,"error":null,)"
            R"("tokens":120,"duration_ms":<ms>,"files_changed":1,"branch":"agentexec/alpha",)"
            R"("answer":"Added new.txt.","reason":null,"check":null})");
  EXPECT_EQ(RecordOf(results, "beta"),
            R"({"id":"beta","status":"failed","exit_code":4,"error_code":"max_turns",)"
            R"j("error":"max turns reached: the model asked for more work after 1 request )j"
            R"j((--max-turns 1)","tokens":0,"duration_ms":<ms>,"files_changed":0,)j"
            R"("branch":"agentexec/beta","answer":"","reason":"max_turns","check":null})");
  EXPECT_EQ(RecordOf(results, "gamma"),
            R"({"id":"gamma","status":"succeeded","exit_code":0,"error_code":null,"error":null,)"
            R"("tokens":120,"duration_ms":<ms>,"files_changed":1,"branch":"agentexec/gamma",)"
            R"("answer":"Added new.txt.","reason":null,"check":null})");

  // The task's files: its record, its events, its answer, its patch; a commit on its branch.
  const std::string task = Out() + "/tasks/alpha";
  EXPECT_EQ(NoDurations(Slurp(task + "/result.json")), RecordOf(results, "alpha") + "\n");
  EXPECT_EQ(Slurp(task + "/final-message.md"), "Added new.txt.\nSecond line.");
  EXPECT_EQ(Slurp(task + "/changes.patch"),
            "diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0000000..ce01362\n"
            "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n");
  std::vector<std::string> events = Lines(Slurp(task + "/events.jsonl"));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(CheckJsonLines(Slurp(task + "/events.jsonl")), "");
  EXPECT_TRUE(events.back().starts_with(R"({"type":"turn.completed")")) << events.back();
  const std::string clone = Out() + "/work/alpha/repo";
  FILE* log = ::popen(("git -C '" + clone + "' log --format=%s%x09%D -1").c_str(), "r");
  ASSERT_NE(log, nullptr);
  char buf[256] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, log);
  ::pclose(log);
  EXPECT_EQ(std::string(buf, n), "agentexec batch: alpha\tHEAD -> agentexec/alpha\n");
  // The source repository is untouched.
  EXPECT_FALSE(fs::exists(ws_.root() + "/alpha/new.txt"));
  // A second run into the same --out without --resume is refused before anything runs.
  RunOutput again = Batch({"run", manifest, "--out", Out()});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(again.err, "error: --out " + Out() +
                           " already holds a batch (results.jsonl): use --resume to finish it, "
                           "or another directory\n");
}

TEST_F(BatchTest, SigtermStopsTheRunningTaskAndResumeFinishesIt) {
  MakeRepo("alpha");
  MakeRepo("beta");
  MakeRepo("gamma", {"slow.txt"});
  const std::string manifest = ws_.WriteFile("m.jsonl",
                                             R"({"id":"alpha","repo":"alpha","prompt":"p"}
{"id":"gamma","repo":"gamma","prompt":"p"}
{"id":"beta","repo":"beta","prompt":"p"}
)");
  RunOptions options;
  // Wait until alpha has ended and gamma's command runs, then SIGTERM the batch (bash's exit
  // status is the batch's).
  options.wrapper = {"/bin/bash", "-c",
                     "\"$@\" & pid=$!; until grep -q command_execution '" + Out() +
                         "/tasks/gamma/events.jsonl' 2>/dev/null && grep -q '\"id\":\"alpha\"' '" +
                         Out() + "/results.jsonl'; do sleep 0.05; done; kill -TERM $pid; wait $pid",
                     "wrapper"};
  RunOutput out = Batch({"run", manifest, "--out", Out(), "-j", "2"}, options);
  EXPECT_EQ(out.exit_code, 143) << out.err;
  const std::string results = Slurp(Out() + "/results.jsonl");
  EXPECT_EQ(RecordOf(results, "gamma"),
            R"({"id":"gamma","status":"interrupted","exit_code":143,"error_code":"terminated",)"
            R"("error":"terminated by SIGTERM","tokens":0,"duration_ms":<ms>,"files_changed":0,)"
            R"("branch":"agentexec/gamma","answer":"","reason":"interrupted","check":null})");
  std::vector<std::string> gamma_events = Lines(Slurp(Out() + "/tasks/gamma/events.jsonl"));
  ASSERT_FALSE(gamma_events.empty());
  EXPECT_TRUE(gamma_events.back().starts_with(R"({"type":"turn.failed")")) << gamma_events.back();
  // beta may have run, been interrupted or not started (no record then).
  EXPECT_NE(results.find(R"({"id":"alpha","status":"succeeded")"), std::string::npos) << results;
  // The last progress line counts what the records say: gamma interrupted, not failed.
  std::map<std::string, int> counted;
  for (const std::string& l : Lines(results)) {
    for (const char* status : {"succeeded", "failed", "interrupted"}) {
      if (l.find(std::string(R"("status":")") + status + "\"") != std::string::npos) {
        ++counted[status];
      }
    }
  }
  EXPECT_EQ(counted["interrupted"] >= 1, true) << results;
  std::string last_progress;
  for (const std::string& l : Lines(out.err)) {
    if (l.starts_with("batch: ")) last_progress = l;
  }
  EXPECT_NE(last_progress.find(fmt::format("{} succeeded, {} failed, 0 no_change, {} interrupted",
                                           counted["succeeded"], counted["failed"],
                                           counted["interrupted"])),
            std::string::npos)
      << last_progress << "\n"
      << results;
  EXPECT_LE(Lines(results).size(), 3u) << results;

  ws_.WriteFile("go", "");
  RunOutput resumed = Batch({"run", manifest, "--out", Out(), "-j", "2", "--resume"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  ASSERT_NO_FATAL_FAILURE(
      ExpectJsonReportHas(R"("summary":{"total":3,"succeeded":3,"failed":0,"no_change":0,)"
                          R"("interrupted":0,"skipped":0,"tokens":360})"));
  // Resume ran only what had not completed: alpha completed before ran once.
  const std::string after = Slurp(Out() + "/results.jsonl");
  size_t alpha_records = 0;
  for (const std::string& l : Lines(after)) {
    if (l.starts_with(R"({"id":"alpha","status":"succeeded")")) ++alpha_records;
  }
  EXPECT_EQ(alpha_records, 1u) << after;
  EXPECT_EQ(Slurp(Out() + "/tasks/gamma/final-message.md"), "Added new.txt.\nSecond line.");
  EXPECT_TRUE(fs::exists(Out() + "/tasks/.interrupted-gamma-1/events.jsonl"));
}

// kill -9 at any point: --resume neither loses nor reruns a task whose record was written.
// The batch is killed after its 1st, then (resumed) after its 4th record; the orphans it
// leaves (a task's agentexec in flight) are waited for, as a CI runner's cleanup would.
TEST_F(BatchTest, KillNineThenResumeLosesAndRerunsNoFinishedTask) {
  std::string manifest_text;
  for (int i = 0; i < 6; ++i) {
    const std::string id = "r" + std::to_string(i);
    MakeRepo(id);
    manifest_text += R"({"id":")" + id + R"(","repo":")" + id + R"(","prompt":"p"})" + "\n";
  }
  const std::string manifest = ws_.WriteFile("m.jsonl", manifest_text);
  const std::string results = Out() + "/results.jsonl";
  std::vector<std::string> before;  // the records written before each kill
  for (int records : {1, 4}) {
    RunOptions options;
    options.wrapper = {
        "/bin/bash", "-c",
        "\"$@\" & pid=$!; until [ \"$(wc -l < '" + results + "' 2>/dev/null || echo 0)\" -ge " +
            std::to_string(records) +
            " ]; do sleep 0.01; done; kill -KILL $pid; wait $pid; "
            // "[/]..." so that the pattern does not match this script's own command line.
            "while pgrep -f -- '[/]" +
            Out().substr(1) +
            "/work/' >/dev/null; do sleep 0.05; "
            "done; exit 137",
        "wrapper"};
    std::vector<std::string> args = {"run", manifest, "--out", Out(), "-j", "2"};
    if (records > 1) args.push_back("--resume");
    RunOutput killed = Batch(args, options);
    EXPECT_EQ(killed.exit_code, 137) << killed.err;
    before = Lines(Slurp(results));
    ASSERT_GE(before.size(), static_cast<size_t>(records));
  }
  RunOutput resumed = Batch({"run", manifest, "--out", Out(), "-j", "2", "--resume"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::vector<std::string> after = Lines(Slurp(results));
  // Every record written before the last kill is still there, first, unchanged.
  ASSERT_GE(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i], before[i]);
  // Each task has exactly one completed record: none lost, none run twice.
  std::map<std::string, int> completed;
  for (const std::string& l : after) {
    if (l.find(R"("status":"succeeded")") != std::string::npos) {
      ++completed[l.substr(7, l.find('"', 7) - 7)];
    }
  }
  EXPECT_EQ(completed.size(), 6u) << Slurp(results);
  for (const auto& [id, n] : completed) EXPECT_EQ(n, 1) << id << "\n" << Slurp(results);
}

// A stderr no one reads (a full pipe) loses progress lines, never the batch: the heartbeat
// every millisecond fills the pipe while the check runs, and the batch still ends.
TEST_F(BatchTest, AStderrNoOneReadsDoesNotStopTheBatch) {
  MakeRepo("alpha");
  const std::string manifest =
      ws_.WriteFile("m.jsonl", R"({"id":"alpha","repo":"alpha","prompt":"p","check":"sleep 2"})");
  RunOptions options;
  options.wrapper = {"/bin/bash", "-c",
                     "fifo=$(mktemp -u) && mkfifo \"$fifo\" && exec 3<>\"$fifo\" && rm \"$fifo\" "
                     "&& \"$@\" 2>&3; echo \"exit $?\"",
                     "wrapper"};
  options.timeout_s = 120;
  RunOutput out = Batch({"run", manifest, "--out", Out(), "--heartbeat", "1ms"}, options);
  EXPECT_EQ(out.out, "exit 0\n") << out.err;
  EXPECT_NE(Slurp(Out() + "/results.jsonl").find(R"("status":"succeeded")"), std::string::npos);
}

TEST_F(BatchTest, MaxFailuresSkipsTheTasksNotStarted) {
  for (const char* r : {"alpha", "beta", "gamma"}) MakeRepo(r);
  const std::string manifest =
      ws_.WriteFile("m.jsonl",
                    R"({"id":"beta","repo":"beta","prompt":"p","max_turns":1}
{"id":"alpha","repo":"alpha","prompt":"p"}
{"id":"gamma","repo":"gamma","prompt":"p"}
)");
  RunOutput out = Batch({"run", manifest, "--out", Out(), "--max-failures", "1"});
  EXPECT_EQ(out.exit_code, 4) << out.err;
  EXPECT_NE(out.err.find("batch: stopped by --max-failures\n"), std::string::npos) << out.err;
  const std::string results = Slurp(Out() + "/results.jsonl");
  ASSERT_EQ(Lines(results).size(), 3u) << results;
  EXPECT_EQ(RecordOf(results, "alpha"),
            R"({"id":"alpha","status":"skipped","exit_code":null,"error_code":null,"error":null,)"
            R"("tokens":0,"duration_ms":<ms>,"files_changed":0,"branch":null,"answer":"",)"
            R"("reason":"max-failures","check":null})");
  EXPECT_FALSE(fs::exists(Out() + "/tasks/alpha"));
  EXPECT_FALSE(fs::exists(Out() + "/work/gamma"));
}

TEST_F(BatchTest, TwoShardsMergeIntoTheUnshardedReport) {
  for (const char* r : {"alpha", "beta", "gamma"}) MakeRepo(r);
  const std::string manifest = ws_.WriteFile("m.jsonl", kThree);
  RunOutput whole = Batch({"run", manifest, "--out", Out("whole"), "-j", "2"});
  ASSERT_EQ(whole.exit_code, 1) << whole.err;
  RunOutput s0 = Batch({"run", manifest, "--out", Out("s0"), "--shard", "0/2"});
  ASSERT_EQ(s0.exit_code, 0) << s0.err;  // alpha and gamma: tasks 0 and 2
  RunOptions gitlab;
  gitlab.env = ws_.Env({{"CI_NODE_INDEX", "2"}, {"CI_NODE_TOTAL", "2"}});
  RunOutput s1 = Batch({"run", manifest, "--out", Out("s1")}, gitlab);
  ASSERT_EQ(s1.exit_code, 1) << s1.err;  // beta fails
  EXPECT_NE(s1.err.find("batch: shard 1/2 (GitLab)\n"), std::string::npos) << s1.err;
  EXPECT_EQ(Lines(Slurp(Out("s0") + "/results.jsonl")).size(), 2u);
  EXPECT_EQ(Lines(Slurp(Out("s1") + "/results.jsonl")).size(), 1u);

  auto report = [&](std::vector<std::string> dirs) {
    std::vector<std::string> args{"report", "--format", "json", "--manifest", manifest};
    args.insert(args.end(), dirs.begin(), dirs.end());
    RunOutput r = Batch(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return NoDurations(r.out);
  };
  const std::string merged = report({Out("s0"), Out("s1")});
  EXPECT_EQ(merged, report({Out("whole")}));
  EXPECT_NE(merged.find(R"({"tasks":[{"id":"alpha",)"), std::string::npos) << merged;

  RunOutput twice = Batch({"report", Out("s0"), Out("whole")});
  EXPECT_EQ(twice.exit_code, 2);
  // s0 records alpha and gamma in the order they ended: either comes first.
  EXPECT_TRUE(twice.err == "error: task 'gamma' is recorded in both " + Out("s0") + " and " +
                               Out("whole") + ": a task belongs to one shard\n" ||
              twice.err == "error: task 'alpha' is recorded in both " + Out("s0") + " and " +
                               Out("whole") + ": a task belongs to one shard\n")
      << twice.err;
  RunOutput missing = Batch({"report", Out("s0"), "--manifest", manifest});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err,
            "error: 1 task(s) of " + manifest + " missing from every directory: 'beta' (line 2)\n");

  RunOutput plan = Batch({"plan", manifest, "--shards", "2"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_EQ(plan.out, R"({"include":[{"shard":"0/2"},{"shard":"1/2"}]})"
                      "\n");
}

TEST_F(BatchTest, ManifestErrorsAreAllReportedBeforeAnythingRuns) {
  MakeRepo("alpha");
  const std::string manifest = ws_.WriteFile("m.jsonl",
                                             R"({"id":"ok","repo":"alpha","prompt":"p"}
{"id":"ok","repo":"alpha","prompt":"p"}
not json

{"repo":"alpha","prompt":"p"}
{"id":"a/b","repo":"alpha","prompt":"p"}
{"id":"-x","repo":"alpha","prompt":"p"}
{"id":"n","prompt":"p"}
{"id":"n2","repo":"alpha"}
{"id":"n3","repo":"alpha","prompt":"p","prompt_file":"f"}
{"id":"n4","repo":"alpha","prompt":"p","colour":"red"}
{"id":"n5","repo":"alpha","prompt":"p","timeout":"soon"}
{"id":"n6","repo":"alpha","prompt":"p","sandbox":"none"}
{"id":"n7","repo":"nowhere","prompt":"p"}
[1]
)");
  RunOutput out = Batch({"run", manifest, "--out", Out()});
  EXPECT_EQ(out.exit_code, 2);
  const std::string m = manifest;
  EXPECT_EQ(
      out.err,
      "error: " + m + ":2: field 'id': duplicate id 'ok' (first on line 1)\n" + "error: " + m +
          ":3: the line is not valid JSON: Invalid value. (at byte 1)\n" + "error: " + m +
          ":5: field 'id': missing\n" + "error: " + m +
          ":6: field 'id': 'a/b' cannot name a file and a branch: use only A-Z a-z 0-9 . _ -, "
          "not starting with '.' or '-'\n" +
          "error: " + m +
          ":7: field 'id': '-x' cannot name a file and a branch: use only A-Z a-z 0-9 . _ -, "
          "not starting with '.' or '-'\n" +
          "error: " + m + ":8: field 'repo': missing\n" + "error: " + m +
          ":9: field 'prompt': missing (give 'prompt' or 'prompt_file')\n" + "error: " + m +
          ":10: field 'prompt_file': cannot be used with 'prompt'\n" + "error: " + m +
          ":11: field 'colour': unknown field (known: id, repo, ref, dir, prompt, prompt_file, "
          "model, sandbox, max_turns, timeout, max_tokens, output_schema, check, check_timeout, "
          "expect_change)\n" +
          "error: " + m +
          ":12: field 'timeout': 'soon' is not a duration such as 90s, 10m, 1h30m\n" +
          "error: " + m +
          ":13: field 'sandbox': 'none' is not one of read-only, workspace-write, "
          "danger-full-access\n" +
          "error: " + m + ":14: field 'repo': " + ws_.root() +
          "/nowhere: No such file or directory\n" + "error: " + m +
          ":15: the line must be a JSON object\n");
  EXPECT_FALSE(fs::exists(Out()));
}

TEST_F(BatchTest, AnOverlongManifestLineIsAnErrorAndTheNextLinesAreStillChecked) {
  MakeRepo("alpha");
  const std::string manifest = ws_.WriteFile(
      "m.jsonl", R"({"id":"big","repo":"alpha","prompt":")" + std::string(1100000, 'x') + "\"}\n" +
                     std::string(3000000, ' ') + "\n" +
                     R"({"id":"next","repo":"alpha","prompt":"p","x":1})" + "\n");
  RunOutput out = Batch({"plan", manifest, "--shards", "2"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.err, "error: " + manifest + ":1: the line is longer than 1048576 bytes\n" +
                         "error: " + manifest + ":2: the line is longer than 1048576 bytes\n" +
                         "error: " + manifest +
                         ":3: field 'x': unknown field (known: id, repo, ref, dir, prompt, "
                         "prompt_file, model, sandbox, max_turns, timeout, max_tokens, "
                         "output_schema, check, check_timeout, expect_change)\n");
  RunOutput help = Batch({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(
      help.out.starts_with("agentexec batch - one task over many repositories, with one "
                           "report.\n\nUsage: agentexec batch run MANIFEST --out DIR"))
      << help.out;
}

TEST_F(BatchTest, OutInsideATasksRepositoryIsRefused) {
  MakeRepo("alpha");
  const std::string manifest =
      ws_.WriteFile("m.jsonl", R"({"id":"a","repo":"alpha","prompt":"p"})");
  RunOutput out = Batch({"run", manifest, "--out", ws_.root() + "/alpha/out"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.err, "error: --out " + ws_.root() +
                         "/alpha/out is inside the repository of task "
                         "'a' (" +
                         ws_.root() +
                         "/alpha): a command the task runs could reach it; choose a directory "
                         "outside it\n");
  RunOutput work = Batch({"run", manifest, "--out", Out() + "/w/out", "--work-dir", Out() + "/w"});
  EXPECT_EQ(work.exit_code, 2);
  EXPECT_EQ(work.err, "error: --out " + Out() + "/w/out is inside --work-dir " + Out() +
                          "/w, where the tasks' clones are: choose a directory outside it\n");
  RunOutput flag = Batch({"run", manifest, "--out", Out(), "-o", "x"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.err.find("error: '-o' cannot be used with 'batch run'"), std::string::npos)
      << flag.err;
}

// An option no table has gets exec's own answer (one wording for the three parsers), not the
// refusal meant for exec's options that batch sets itself.
TEST_F(BatchTest, AnUnknownOptionIsDescribedAsExecDescribesIt) {
  const std::string tip =
      "error: unexpected argument '--foo' found\n\n  tip: to pass '--foo' as a value, use "
      "'-- --foo'\n\n";
  RunOutput exec = RunAgentexec({"--foo"}, {});
  EXPECT_EQ(exec.exit_code, 2);
  EXPECT_TRUE(exec.err.starts_with(tip)) << exec.err;
  for (const char* sub : {"run", "report", "plan"}) {
    RunOutput out = RunAgentexec({"batch", sub, "m.jsonl", "--foo", "--out", "o"}, {});
    EXPECT_EQ(out.exit_code, 2) << sub;
    EXPECT_EQ(out.err, tip +
                           "Usage: agentexec batch run MANIFEST --out DIR [-j N] [--shard I/N] "
                           "[--resume] [OPTIONS]\n"
                           "       agentexec batch report DIR... [--format markdown|junit|json] "
                           "[--manifest MANIFEST]\n"
                           "       agentexec batch plan MANIFEST --shards N\n"
                           "       agentexec batch publish DIR [--work-dir DIR] [--force]\n\n"
                           "For more information, try 'agentexec batch --help'.\n")
        << sub;
  }
  RunOutput sandbox = RunAgentexec({"sandbox", "--foo", "true"}, {});
  EXPECT_EQ(sandbox.exit_code, 2);
  EXPECT_TRUE(sandbox.err.starts_with(tip)) << sandbox.err;
}

// --out and --work-dir must be out of every task's reach: batch asks a task's agentexec, with
// the same options, which paths its commands could write (those that do not exist yet
// included: batch makes a task's directories before it starts) and refuses the batch before
// any task runs. A relative --add-dir lies in each task's own clone, which is its own.
TEST_F(BatchTest, RecordsATaskCouldWriteAreRefused) {
  MakeRepo("alpha");
  const std::string manifest =
      ws_.WriteFile("m.jsonl", R"({"id":"a","repo":"alpha","prompt":"p"})");
  const std::string tail =
      "): choose a directory outside it, or leave it out of writable_roots, --add-dir and "
      "shared_tmp\n";
  RunOutput add_dir = Batch({"run", manifest, "--out", Out(), "--add-dir", ws_.root()});
  EXPECT_EQ(add_dir.exit_code, 2);
  EXPECT_EQ(add_dir.err, "error: --out " + Out() +
                             " is reachable from the tasks' commands (a task with these options "
                             "may write " +
                             ws_.root() + tail);
  RunOutput later = Batch({"run", manifest, "--out", Out(), "-c",
                           "sandbox_workspace_write.writable_roots=[\"" + Out() + "/tasks/b\"]"});
  EXPECT_EQ(later.exit_code, 2);
  EXPECT_EQ(later.err, "error: --out " + Out() +
                           " is reachable from the tasks' commands (a task with these options "
                           "may write " +
                           Out() + "/tasks/b" + tail);
  const std::string work = ws_.root() + "/clones";
  const std::string per_task = ws_.WriteFile(
      "m2.jsonl", R"({"id":"a","repo":"alpha","prompt":"p","sandbox":"workspace-write"})");
  RunOutput own = Batch({"run", per_task, "--out", Out("out2"), "--work-dir", work, "--add-dir",
                         work + "/b", "-s", "read-only"});
  EXPECT_EQ(own.exit_code, 2);
  EXPECT_EQ(own.err, "error: --work-dir " + work +
                         " is reachable from the tasks' commands (a task with sandbox "
                         "'workspace-write' may write " +
                         work + "/b" + tail);
  EXPECT_FALSE(fs::exists(work + "/a"));

  RunOutput relative = Batch({"run", manifest, "--out", Out("out3"), "--add-dir", "build"});
  EXPECT_EQ(relative.exit_code, 0) << relative.err;
}

TEST_F(BatchTest, MaxTotalTokensStartsNoTaskOnceSpent) {
  for (const char* r : {"alpha", "beta", "gamma"}) MakeRepo(r);
  const std::string manifest = ws_.WriteFile("m.jsonl", kThree);
  RunOutput out = Batch({"run", manifest, "--out", Out(), "--max-total-tokens", "100"});
  EXPECT_EQ(out.exit_code, 4) << out.err;
  EXPECT_NE(out.err.find("batch: 1/3 done, 0 running, 1 succeeded, 0 failed, 0 no_change, "
                         "0 interrupted, 2 skipped, 120 tokens\n"),
            std::string::npos)
      << out.err;
  const std::string results = Slurp(Out() + "/results.jsonl");
  EXPECT_NE(results.find(R"({"id":"alpha","status":"succeeded")"), std::string::npos);
  for (const char* id : {"beta", "gamma"}) {
    EXPECT_NE(RecordOf(results, id).find(R"("status":"skipped")"), std::string::npos) << results;
    EXPECT_NE(RecordOf(results, id).find(R"("reason":"max-total-tokens","check":null})"),
              std::string::npos);
  }
}

TEST_F(BatchTest, MaxTotalTimeStopsTheRunningTaskAndSkipsTheRest) {
  MakeRepo("alpha", {"slow.txt"});
  MakeRepo("beta");
  const std::string manifest = ws_.WriteFile("m.jsonl",
                                             R"({"id":"alpha","repo":"alpha","prompt":"p"}
{"id":"beta","repo":"beta","prompt":"p"}
)");
  RunOutput out = Batch({"run", manifest, "--out", Out(), "--max-total-time", "3s"});
  EXPECT_EQ(out.exit_code, 4) << out.err;
  EXPECT_NE(out.err.find("batch: stopped by --max-total-time\n"), std::string::npos) << out.err;
  const std::string results = Slurp(Out() + "/results.jsonl");
  EXPECT_EQ(RecordOf(results, "alpha"),
            R"({"id":"alpha","status":"interrupted","exit_code":143,"error_code":"terminated",)"
            R"("error":"terminated by SIGTERM","tokens":0,"duration_ms":<ms>,"files_changed":0,)"
            R"("branch":"agentexec/alpha","answer":"","reason":"max-total-time","check":null})");
  EXPECT_EQ(RecordOf(results, "beta"),
            R"({"id":"beta","status":"skipped","exit_code":null,"error_code":null,"error":null,)"
            R"("tokens":0,"duration_ms":<ms>,"files_changed":0,"branch":null,"answer":"",)"
            R"("reason":"max-total-time","check":null})");
}

TEST_F(BatchTest, TheShardComesFromKubernetesOrSlurmVariables) {
  for (const char* r : {"alpha", "beta", "gamma"}) MakeRepo(r);
  const std::string manifest = ws_.WriteFile("m.jsonl", kThree);
  RunOptions k8s;
  k8s.env = ws_.Env({{"JOB_COMPLETION_INDEX", "1"}, {"AGENTEXEC_SHARD_TOTAL", "2"}});
  RunOutput out = Batch({"run", manifest, "--out", Out("k")}, k8s);
  EXPECT_EQ(out.exit_code, 1) << out.err;  // beta, which fails
  EXPECT_NE(out.err.find("batch: shard 1/2 (Kubernetes)\n"), std::string::npos) << out.err;
  EXPECT_EQ(Lines(Slurp(Out("k") + "/results.jsonl")).size(), 1u);

  // --array=1-5:2 is ids 1, 3, 5: id 5 is the third shard of three.
  RunOptions slurm;
  slurm.env = ws_.Env({{"SLURM_ARRAY_TASK_ID", "5"},
                       {"SLURM_ARRAY_TASK_MIN", "1"},
                       {"SLURM_ARRAY_TASK_MAX", "5"},
                       {"SLURM_ARRAY_TASK_COUNT", "3"},
                       {"SLURM_ARRAY_TASK_STEP", "2"}});
  out = Batch({"run", manifest, "--out", Out("s")}, slurm);
  EXPECT_EQ(out.exit_code, 0) << out.err;  // gamma
  EXPECT_NE(out.err.find("batch: shard 2/3 (Slurm)\n"), std::string::npos) << out.err;
  EXPECT_NE(Slurp(Out("s") + "/results.jsonl").find(R"({"id":"gamma","status":"succeeded")"),
            std::string::npos);

  slurm.env = ws_.Env({{"SLURM_ARRAY_TASK_ID", "7"},
                       {"SLURM_ARRAY_TASK_MIN", "1"},
                       {"SLURM_ARRAY_TASK_MAX", "7"},
                       {"SLURM_ARRAY_TASK_COUNT", "3"}});
  out = Batch({"run", manifest, "--out", Out("x")}, slurm);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.err,
            "error: Slurm: the array (ids 1..7, 3 tasks, step 1) is not a range such as "
            "--array=0-7; pass --shard I/N\n");
  k8s.env = ws_.Env({{"JOB_COMPLETION_INDEX", "0"}});
  out = Batch({"run", manifest, "--out", Out("x")}, k8s);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.err,
            "error: Kubernetes: JOB_COMPLETION_INDEX is set, but not the number of shards: pass "
            "--shard-total N or set AGENTEXEC_SHARD_TOTAL (the Job's completions)\n");
  RunOptions gitlab;
  gitlab.env = ws_.Env({{"CI_NODE_INDEX", "3"}, {"CI_NODE_TOTAL", "2"}});
  out = Batch({"run", manifest, "--out", Out("x")}, gitlab);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.err, "error: GitLab: shard 2 of 2 does not exist (CI_NODE_INDEX counts from 1)\n");
}

// `ref` is checked out and `dir` is the task's cwd; a missing ref, or a `dir` the checkout
// turns into a link out of the clone, fails that task alone with a clear error.
TEST_F(BatchTest, RefAndDirAreHonouredAndALinkOutOfTheCloneIsRefused) {
  MakeRepo("alpha");
  const std::string repo = ws_.root() + "/alpha";
  const std::string cmd = "cd '" + repo +
                          "' && git checkout -qb feature && mkdir sub && echo s > sub/s.txt && "
                          "ln -s /etc escape && git add . && "
                          "git -c user.name=t -c user.email=t@example.com commit -qm feature && "
                          "git checkout -q -";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string manifest =
      ws_.WriteFile("m.jsonl",
                    R"({"id":"sub","repo":"alpha","ref":"feature","dir":"sub","prompt":"p"}
{"id":"noref","repo":"alpha","ref":"nope","prompt":"p"}
{"id":"escape","repo":"alpha","ref":"feature","dir":"escape","prompt":"p"}
{"id":"schema","repo":"alpha","prompt":"p","output_schema":"schema.json"}
)");
  ws_.WriteFile("schema.json", "{");
  RunOutput out = Batch({"run", manifest, "--out", Out()});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  const std::string results = Slurp(Out() + "/results.jsonl");
  EXPECT_NE(RecordOf(results, "sub").find(R"("status":"succeeded")"), std::string::npos) << results;
  // The task ran in sub/ of the feature branch: its new file is there.
  EXPECT_EQ(Slurp(Out() + "/work/sub/repo/sub/new.txt"), "hello\n");
  EXPECT_NE(Slurp(Out() + "/tasks/sub/changes.patch").find("+++ b/sub/new.txt"), std::string::npos);
  EXPECT_EQ(RecordOf(results, "noref"),
            R"({"id":"noref","status":"failed","exit_code":null,"error_code":null,)"
            R"("error":"ref 'nope' not found in )" +
                repo +
                R"(","tokens":0,"duration_ms":<ms>,"files_changed":0,"branch":null,)"
                R"("answer":"","reason":"setup_failed","check":null})");
  EXPECT_EQ(RecordOf(results, "escape"),
            R"({"id":"escape","status":"failed","exit_code":null,"error_code":null,)"
            R"("error":"dir 'escape' is not a directory inside the repository","tokens":0,)"
            R"("duration_ms":<ms>,"files_changed":0,"branch":"agentexec/escape","answer":"",)"
            R"("reason":"setup_failed","check":null})");
  // A child that fails before its turn (exit 2) has no turn.failed: its stderr says why.
  EXPECT_EQ(RecordOf(results, "schema"),
            R"({"id":"schema","status":"failed","exit_code":2,"error_code":null,)"
            R"("error":"error: --output-schema )" +
                ws_.root() +
                R"j(/schema.json: not a JSON object (Missing a name for object member. at byte )j"
                R"j(offset 1)","tokens":0,"duration_ms":<ms>,"files_changed":0,)j"
                R"("branch":"agentexec/schema","answer":"","reason":"error","check":null})");
}

// A command that can write .git (here: no sandbox) sets a clean filter; batch's own git add
// would run it unconfined. Batch sees the changed configuration and runs no git on the clone.
TEST_F(BatchTest, AGitConfigChangedByTheTaskIsNotUsed) {
  MakeRepo("alpha");
  const std::string pwned = ws_.root() + "/pwned";
  const std::string manifest = ws_.WriteFile(
      "m.jsonl", R"({"id":"alpha","repo":"alpha","prompt":"p","sandbox":"danger-full-access"})");
  script_ = ws_.WriteFile(
      "filter.json",
      R"({"turns":[{"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"git config filter.x.clean 'touch )" +
          pwned + R"(; cat' && echo '* filter=x' > .gitattributes"}}]},
        {"items":[{"type":"message","text":"configured"}]}]})");
  RunOutput out = Batch({"run", manifest, "--out", Out()});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  EXPECT_FALSE(fs::exists(pwned));
  EXPECT_NE(Slurp(Out() + "/results.jsonl")
                .find(R"("error":"the task changed the clone's git configuration (.git/config); )"
                      R"(batch runs no git command on it")"),
            std::string::npos)
      << Slurp(Out() + "/results.jsonl");
}

// What a task's commands leave behind as build artefacts (scripts/ci/artefacts.gitignore),
// untracked, is neither in changes.patch nor in the commit; a tracked file of the same kind,
// changed, is, and so is a new source file; the repository's own .gitignore still applies.
TEST_F(BatchTest, BuildArtefactsACommandLeftAreNotTheTasksChanges) {
  MakeRepo("alpha", {"kept.pyc", ".gitignore"});
  ASSERT_EQ(
      std::system(("echo '*.log' > '" + ws_.root() + "/alpha/.gitignore' && git -C '" + ws_.root() +
                   "/alpha' -c user.name=t -c user.email=t@example.com commit -qam ignore")
                      .c_str()),
      0);
  const std::string manifest =
      ws_.WriteFile("m.jsonl", R"({"id":"alpha","repo":"alpha","prompt":"p"})");
  script_ = ws_.WriteFile(
      "artefacts.json",
      R"({"turns":[{"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":)"
      R"("mkdir -p __pycache__ src/__pycache__ node_modules/x .pytest_cache target && )"
      R"(echo b > __pycache__/m.cpython-311.pyc && echo b > src/__pycache__/n.pyc && )"
      R"(echo j > node_modules/x/index.js && echo c > .pytest_cache/v && echo o > target/a.o && )"
      R"(echo l > run.log && echo y > kept.pyc && echo 'x = 1' > src/new.py"}}]},)"
      R"({"items":[{"type":"message","text":"done"}]}]})");
  RunOutput out = Batch({"run", manifest, "--out", Out()});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(Slurp(Out() + "/tasks/alpha/changes.patch"),
            "diff --git a/kept.pyc b/kept.pyc\nindex 587be6b..975fbec 100644\n--- a/kept.pyc\n"
            "+++ b/kept.pyc\n@@ -1 +1 @@\n-x\n+y\n"
            "diff --git a/src/new.py b/src/new.py\nnew file mode 100644\nindex 0000000..7d4290a\n"
            "--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+x = 1\n");
  EXPECT_NE(Slurp(Out() + "/results.jsonl").find(R"("files_changed":2,)"), std::string::npos)
      << Slurp(Out() + "/results.jsonl");
  FILE* show = ::popen(
      ("git -C '" + Out() + "/work/alpha/repo' show --name-only --format= HEAD").c_str(), "r");
  ASSERT_NE(show, nullptr);
  char buf[256] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, show);
  ::pclose(show);
  EXPECT_EQ(std::string(buf, n), "kept.pyc\nsrc/new.py\n");
}

// A task's command under danger-full-access walks its ancestors' /proc/PID/environ: batch is
// one of them, and it must not show the credentials the tasks inherit from it.
TEST_F(BatchTest, ATasksCommandFindsNoCredentialInBatchsEnvironment) {
  MakeRepo("alpha");
  const std::string manifest = ws_.WriteFile(
      "m.jsonl",
      R"({"id":"alpha","repo":"alpha","prompt":"p","sandbox":"danger-full-access","expect_change":false})");
  const std::string peek = ws_.WriteFile("peek.sh", R"(p=$PPID
while [ "$p" -gt 1 ]; do
  tr '\0' '\n' < /proc/$p/environ
  p=$(awk '/^PPid:/{print $2}' /proc/$p/status)
done 2>&1
echo peeked
)");
  script_ = ws_.WriteFile(
      "peek.json",
      R"({"turns":[{"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"sh )" +
          peek + R"(","login":false}}]},
        {"items":[{"type":"message","text":"looked"}]}]})");
  RunOptions options;
  options.env = ws_.Env({{"DEPLOY_TOKEN", "tok-s3cr3t-5151"}, {"PLAIN_SETTING", "visible-42"}});
  RunOutput out = Batch({"run", manifest, "--out", Out()}, options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
  const std::string events = Slurp(Out() + "/tasks/alpha/events.jsonl");
  EXPECT_NE(events.find("peeked"), std::string::npos) << events;
  // As root the walk did read environments (a plain variable shows), but no credential; as
  // another user batch and the task's agentexec are non-dumpable, so their environ is refused.
  if (::geteuid() == 0) {
    EXPECT_NE(events.find("PLAIN_SETTING=visible-42"), std::string::npos) << events;
  } else {
    EXPECT_NE(events.find("environ: Permission denied"), std::string::npos) << events;
  }
  EXPECT_EQ(events.find("tok-s3cr3t-5151"), std::string::npos) << events;
}

// The attacker's script of the tests below. It walks from its parent up to batch; for each
// ancestor it searches environ, cmdline and memory (every readable region of /proc/PID/maps,
// read through /proc/PID/mem) for the two secrets, which it gets as hex, so neither its command
// nor its output carries their bytes; "denied" is a refused open. Its first line searches its
// own memory, which holds what it looks for: the search itself works. With the argument
// `count` it only counts each secret's bytes in batch's memory (a freed copy whose name the
// allocator overwrote included): those followed by the next variable of the environment are in
// a copy of the whole startup block (a sanitizer runtime keeps one, read from
// /proc/self/environ), the others stand alone.
constexpr const char* kMemoryThief = R"py(import os, sys
# The name in the output, the value, and what follows it in a copy of the startup block (the
# variable after it: the test's environment is sorted by name).
SECRETS = [("key", bytes.fromhex("@KEY@"), b"\0PATH="),
           ("token", bytes.fromhex("@TOKEN@"), b"\0HOME=")]
LIMIT = 1 << 30  # larger regions are reservations (a sanitizer's shadow), not data


def verdict(found):
    return ", ".join(s[0] + (" found" if f else " not found") for s, f in zip(SECRETS, found))


def search(data):
    return [s[1] in data for s in SECRETS]


def proc_file(pid, name):
    try:
        with open("/proc/%d/%s" % (pid, name), "rb") as f:
            return verdict(search(f.read()))
    except PermissionError:
        return "denied"


def regions(pid):
    """Each readable region's bytes, or None when the memory is closed to us."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read().splitlines()
        mem = open("/proc/%d/mem" % pid, "rb", buffering=0)
    except PermissionError:
        return None
    out = []
    with mem:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if not fields[1].startswith("r") or end - start > LIMIT:
                continue
            parts, at = [], start
            while at < end:
                try:
                    mem.seek(at)
                    data = mem.read(min(1 << 20, end - at))
                except OSError:
                    break
                if not data:
                    break
                parts.append(data)
                at += len(data)
            out.append(b"".join(parts))
    return out


def memory(pid):
    data = regions(pid)
    if data is None:
        return "denied"
    found = [False] * len(SECRETS)
    for region in data:
        found = [a or b for a, b in zip(found, search(region))]
    return verdict(found)


def copies(pid):
    counts = []
    for name, value, following in SECRETS:
        alone, block = 0, 0
        for region in regions(pid) or []:
            at = region.find(value)
            while at >= 0:
                after = region[at + len(value):at + len(value) + len(following)]
                block, alone = (block + 1, alone) if after == following else (block, alone + 1)
                at = region.find(value, at + 1)
        counts.append("%s %d alone, %d in an environment block" % (name, alone, block))
    return "; ".join(counts)


def role(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        argv = f.read().split(b"\0")
    if len(argv) > 1 and argv[1] in (b"batch", b"exec"):
        return "agentexec " + argv[1].decode()
    with open("/proc/%d/comm" % pid) as f:
        return f.read().strip()


def parent(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("PPid:"):
                return int(line.split()[1])
    return 0


count = sys.argv[1:] == ["count"]
if not count:
    print("self mem:", memory(os.getpid()))
pid = os.getppid()
while pid > 1:
    who = role(pid)
    if count and who == "agentexec batch":
        print("%s mem: %s" % (who, copies(pid)))
    if not count:
        for source in ("environ", "cmdline"):
            print("%s %s: %s" % (who, source, proc_file(pid, source)))
        print("%s mem: %s" % (who, memory(pid)))
    if who == "agentexec batch":
        break
    pid = parent(pid)
else:
    print("no agentexec batch among the ancestors")
)py";

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : bytes) hex += {kDigits[c >> 4], kDigits[c & 15]};
  return hex;
}

std::string RandomHex(size_t bytes) {
  std::random_device random;
  std::string raw;
  for (size_t i = 0; i < bytes; ++i) raw.push_back(static_cast<char>(random() & 0xff));
  return Hex(raw);
}

// kMemoryThief, looking for `key` and `token`.
std::string MemoryThief(const std::string& key, const std::string& token) {
  std::string thief = kMemoryThief;
  thief.replace(thief.find("@KEY@"), 5, Hex(key));
  thief.replace(thief.find("@TOKEN@"), 7, Hex(token));
  return thief;
}

// The aggregated_output of every command_execution that completed in an events.jsonl text.
std::vector<std::string> CommandOutputs(const std::string& events) {
  std::vector<std::string> outputs;
  for (const std::string& line : Lines(events)) {
    rapidjson::Document doc;
    doc.Parse(line.c_str());
    if (!doc.IsObject() || !doc.HasMember("type") || doc["type"] != "item.completed") continue;
    const rapidjson::Value& item = doc["item"];
    if (item["type"] == "command_execution")
      outputs.push_back(item["aggregated_output"].GetString());
  }
  return outputs;
}

// The secrets batch passes on to its tasks (the provider's key in OPENAI_API_KEY, a
// GITHUB_TOKEN) are in batch's memory for as long as it runs: the copy each task's agentexec
// gets. A task's command under danger-full-access runs unconfined as the same user, walks its
// ancestors and reads each one's /proc/PID/mem: batch must be non-dumpable, so that only
// CAP_SYS_PTRACE opens it. Two tasks, so the second also looks after batch has run one.
//
// How this fails without the protection: /proc/PID/mem (and maps, environ) open only with
// ptrace access, which a process of the same uid without CAP_SYS_PTRACE has to a dumpable
// process when Yama allows it. As root the test runs batch, and so its tasks' commands, as
// nobody (setpriv, no capability left after its execve: root's CAP_SYS_PTRACE would read any
// memory, non-dumpable or not, the documented limit); as another user it runs them as that
// user. Where Yama's ptrace_scope is 1 or more a process cannot read an ancestor's memory
// anyway (only descendants'), so nothing here could tell batch's own protection from Yama's:
// the test skips and says so. On this project's machines (no Yama; root, so nobody) a dumpable
// batch shows "agentexec batch mem: key found, token found" and its environ reads as
// "key not found, token not found" (the values are wiped from it, the names are there).
TEST_F(BatchTest, ATasksCommandFindsNoCredentialInBatchsMemory) {
  const std::string scope = Slurp("/proc/sys/kernel/yama/ptrace_scope");
  if (!scope.empty() && scope != "0\n") {
    GTEST_SKIP() << "Yama ptrace_scope is " << scope.substr(0, scope.size() - 1)
                 << ": the kernel already refuses a process its ancestors' memory, so this "
                    "test cannot show that batch refuses it itself";
  }
  const bool root = ::geteuid() == 0;
  if (root && !fs::exists("/usr/bin/setpriv")) {
    GTEST_SKIP() << "as root the test needs /usr/bin/setpriv to run batch as nobody (root "
                    "reads every process's memory)";
  }
  const std::string key = "test-batch-key-" + RandomHex(16);  // the server logs "Bearer test..."
  const std::string token = "ghp_" + RandomHex(18);
  const std::string manifest = TwoUnconfinedTasks();
  const std::string thief_path = ws_.WriteFile("thief.py", MemoryThief(key, token));
  const std::string call =
      R"({"items":[{"type":"function_call","name":"exec_command","call_id":"c1","arguments":)"
      R"({"cmd":"python3 )" +
      thief_path + R"(","login":false,"yield_time_ms":60000}}]})";
  const std::string answer = R"({"items":[{"type":"message","text":"looked"}]})";
  // -j 1: the tasks take the server's turns in order, a call and an answer each.
  const std::string turns = ws_.WriteFile(
      "mem-turns.json", R"({"turns":[)" + call + "," + answer + "," + call + "," + answer + "]}");
  TestModelServer server;
  Result<int> port = server.Start(turns, {}, 120);
  ASSERT_TRUE(port.ok()) << port.message();
  std::string config = MockProviderConfig(server);
  config.replace(config.find("MOCK_KEY"), 8, "OPENAI_API_KEY");
  ws_.WriteFile("agentexec-home/config.toml", config);

  RunOptions options;
  options.cwd = ws_.root();
  options.env = ws_.Env({{"OPENAI_API_KEY", key}, {"GITHUB_TOKEN", token}});
  options.timeout_s = 180;
  if (root) {
    ASSERT_EQ(std::system(("chown -R 65534:65534 '" + ws_.root() + "'").c_str()), 0);
    options.wrapper = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    options.reachable_binary = true;
  }
  RunOutput out = RunAgentexec({"batch", "run", manifest, "--out", Out(), "-j", "1"}, options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
  // The tasks got the key as before: each task's first request carried it.
  std::vector<LoggedRequest> requests = server.Requests();
  ASSERT_EQ(requests.size(), 4u) << out.err;
  EXPECT_EQ(requests[0].headers["authorization"], "Bearer " + key);
  EXPECT_EQ(requests[2].headers["authorization"], "Bearer " + key);

  const std::string expected =
      "self mem: key found, token found\n"
      "agentexec exec environ: denied\n"
      "agentexec exec cmdline: key not found, token not found\n"
      "agentexec exec mem: denied\n"
      "agentexec batch environ: denied\n"
      "agentexec batch cmdline: key not found, token not found\n"
      "agentexec batch mem: denied\n";
  const std::string results = Slurp(Out() + "/results.jsonl");
  for (const char* id : {"alpha", "beta"}) {
    // Non-dumpable, batch still reads the answer through its own /proc/self/fd.
    EXPECT_NE(RecordOf(results, id).find(R"("status":"succeeded")"), std::string::npos) << results;
    EXPECT_NE(RecordOf(results, id).find(R"("answer":"looked")"), std::string::npos) << results;
    const std::string task = Out() + "/tasks/" + id;
    const std::string events = Slurp(task + "/events.jsonl");
    EXPECT_EQ(CommandOutputs(events), std::vector<std::string>{expected}) << id << "\n" << events;
    for (const std::string& file : {events, Slurp(task + "/stderr.log")}) {
      EXPECT_EQ(file.find(key), std::string::npos) << id;
      EXPECT_EQ(file.find(token), std::string::npos) << id;
    }
  }
  for (const std::string& text : {results, out.out, out.err}) {
    EXPECT_EQ(text.find(key), std::string::npos) << text;
    EXPECT_EQ(text.find(token), std::string::npos) << text;
  }
}

// What batch keeps of the credentials it passes on. Root, whom non-dumpability does not stop
// (CAP_SYS_PTRACE), reads batch's memory from each of two tasks' commands and finds each
// credential once, in the environment batch keeps for its tasks (Batch::env_): the copies made
// for each child (each git's, each task's agentexec's) were zeroed once the child had started,
// so the second task finds no more than the first. In a sanitizer build the runtime's own copy
// of the startup block is there too (the "1 in an environment block"; 0 elsewhere). Without
// the wiping (as before issue #36) the first task found 6 copies of each standing alone and
// the second 14 (ASan build).
TEST_F(BatchTest, BatchKeepsOneCopyOfEachCredential) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only root reads a non-dumpable batch's memory";
  const std::string key = "test-batch-key-" + RandomHex(16);
  const std::string token = "ghp_" + RandomHex(18);
  const std::string manifest = TwoUnconfinedTasks();
  const std::string thief_path = ws_.WriteFile("thief.py", MemoryThief(key, token));
  script_ = ws_.WriteFile(
      "count.json",
      R"({"turns":[{"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"python3 )" +
          thief_path + R"( count","login":false,"yield_time_ms":60000}}]},
        {"items":[{"type":"message","text":"counted"}]}]})");
  RunOptions options;
  options.env = ws_.Env({{"OPENAI_API_KEY", key}, {"GITHUB_TOKEN", token}});
  RunOutput out = Batch({"run", manifest, "--out", Out(), "-j", "1"}, options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
  const std::regex once(
      "agentexec batch mem: key 1 alone, [01] in an environment block; token 1 alone, [01] in "
      "an environment block\n");
  for (const char* id : {"alpha", "beta"}) {
    std::vector<std::string> outputs =
        CommandOutputs(Slurp(Out() + "/tasks/" + id + "/events.jsonl"));
    ASSERT_EQ(outputs.size(), 1u) << id;
    EXPECT_TRUE(std::regex_match(outputs[0], once)) << id << ": " << outputs[0];
  }
}

// A confined command plants a link where batch will write the task's patch: batch refuses to
// write through it (and says so in the record) instead of writing to the link's target. Here
// --out is under /tmp: a confined task cannot even make the link (its /tmp is its own, and
// batch refuses an --out a confined task could reach), so the link is planted by an
// unconfined one.
TEST_F(BatchTest, ALinkPlantedInTheTaskDirectoryIsNotFollowed) {
  MakeRepo("alpha");
  const std::string target = ws_.root() + "/target.txt";
  ws_.WriteFile("target.txt", "untouched");
  const std::string manifest = ws_.WriteFile(
      "m.jsonl", R"({"id":"alpha","repo":"alpha","prompt":"p","expect_change":false})");
  script_ = ws_.WriteFile(
      "plant.json",
      R"({"turns":[{"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"ln -s )" +
          target + " " + Out() + "/tasks/alpha/changes.patch; ln -s " + target + " " +
          Out("shared") + R"(/tasks/alpha/changes.patch"}}]},
        {"items":[{"type":"message","text":"planted"}]}]})");
  RunOutput out = Batch({"run", manifest, "--out", Out()});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(Slurp(target), "untouched");
  EXPECT_NE(Slurp(Out() + "/tasks/alpha/events.jsonl").find("Read-only file system"),
            std::string::npos);
  const std::string unconfined = ws_.WriteFile(
      "m2.jsonl",
      R"({"id":"alpha","repo":"alpha","prompt":"p","sandbox":"danger-full-access","expect_change":false})");
  out = Batch({"run", unconfined, "--out", Out("shared")});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  EXPECT_EQ(Slurp(target), "untouched");
  const std::string results = Slurp(Out("shared") + "/results.jsonl");
  EXPECT_NE(results.find(R"("status":"failed","exit_code":0,"error_code":null,)"
                         R"("error":"cannot create changes.patch: File exists")"),
            std::string::npos)
      << results;
}

// A task succeeds only when its turn completed and its check exited 0; a check that fails or
// times out fails the task with reason check_failed and the tail of its output; a task that
// changed nothing is no_change unless its manifest expects no change. The progress line names
// the running task, again at each heartbeat while nothing else happens.
TEST_F(BatchTest, ACheckDecidesSuccessAndNoChangeIsItsOwnStatus) {
  MakeRepo("alpha");
  MakeRepo("beta");
  MakeRepo("slow");
  for (const char* r : {"same", "quiet"}) {
    MakeRepo(r);
    // The task's new.txt is ignored by the repository: not a change.
    const std::string dir = ws_.root() + "/" + r;
    const std::string cmd = "cd '" + dir + "' && echo new.txt > .gitignore && git add . && " +
                            "git -c user.name=t -c user.email=t@example.com commit -qm ignore";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  const std::string manifest =
      ws_.WriteFile("m.jsonl", R"({"id":"alpha","repo":"alpha","prompt":"p"}
{"id":"beta","repo":"beta","prompt":"p","check":"echo it broke >&2; exit 3"}
{"id":"same","repo":"same","prompt":"p"}
{"id":"quiet","repo":"quiet","prompt":"p","expect_change":false}
{"id":"slow","repo":"slow","prompt":"p","check":"echo waiting; sleep 30","check_timeout":"1s"}
)");
  RunOutput out = Batch({"run", manifest, "--out", Out(), "--check",
                         "test -e new.txt && echo checked", "--heartbeat", "100ms"});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  const std::string results = Slurp(Out() + "/results.jsonl");
  auto check_ms = [](std::string record) {
    return std::regex_replace(record, std::regex(R"("duration_ms":\d+,"timed_out")"),
                              R"("duration_ms":<ms>,"timed_out")");
  };
  EXPECT_EQ(check_ms(RecordOf(results, "alpha")),
            R"({"id":"alpha","status":"succeeded","exit_code":0,"error_code":null,"error":null,)"
            R"("tokens":120,"duration_ms":<ms>,"files_changed":1,"branch":"agentexec/alpha",)"
            R"("answer":"Added new.txt.","reason":null,"check":{"exit_code":0,)"
            R"("duration_ms":<ms>,"timed_out":false,"output":"checked\n"}})");
  EXPECT_EQ(
      check_ms(RecordOf(results, "beta")),
      R"({"id":"beta","status":"failed","exit_code":0,"error_code":null,)"
      R"("error":"the check exited 3","tokens":120,"duration_ms":<ms>,"files_changed":1,)"
      R"("branch":"agentexec/beta","answer":"Added new.txt.","reason":"check_failed",)"
      R"("check":{"exit_code":3,"duration_ms":<ms>,"timed_out":false,"output":"it broke\n"}})");
  EXPECT_EQ(RecordOf(results, "same"),
            R"({"id":"same","status":"no_change","exit_code":0,"error_code":null,"error":null,)"
            R"("tokens":120,"duration_ms":<ms>,"files_changed":0,"branch":"agentexec/same",)"
            R"("answer":"Added new.txt.","reason":"no_change","check":null})");
  EXPECT_NE(RecordOf(results, "quiet")
                .find(R"({"id":"quiet","status":"succeeded","exit_code":0,"error_code":null,)"
                      R"("error":null,"tokens":120,"duration_ms":<ms>,"files_changed":0,)"),
            std::string::npos)
      << results;
  EXPECT_EQ(check_ms(RecordOf(results, "slow")),
            R"({"id":"slow","status":"failed","exit_code":0,"error_code":null,)"
            R"("error":"the check timed out after 1s","tokens":120,"duration_ms":<ms>,)"
            R"("files_changed":1,"branch":"agentexec/slow","answer":"Added new.txt.",)"
            R"("reason":"check_failed","check":{"exit_code":-1,"duration_ms":<ms>,)"
            R"("timed_out":true,"output":"waiting\n"}})");
  // The check's whole output is kept beside the record; only a task that succeeded with a
  // change has a branch to deliver.
  EXPECT_EQ(Slurp(Out() + "/tasks/beta/check.log"), "it broke\n");
  EXPECT_TRUE(fs::exists(Out() + "/tasks/alpha/branch.json"));
  for (const char* id : {"beta", "same", "quiet", "slow"}) {
    EXPECT_FALSE(fs::exists(Out() + "/tasks/" + id + "/branch.json")) << id;
  }
  // The pull request's title and body, as gh and glab get them (the check's time aside).
  EXPECT_EQ(Slurp(Out() + "/tasks/alpha/pr-title.txt"), "agentexec: alpha: p\n");
  EXPECT_EQ(std::regex_replace(Slurp(Out() + "/tasks/alpha/pr-body.md"),
                               std::regex("passed in [0-9hms]+"), "passed in <d>"),
            "Made by `agentexec batch`, task **alpha**.\n\n"
            "### Task\n\np\n\n"
            "### What the agent said\n\nAdded new.txt.  \nSecond line.\n\n"
            "### Check\n\n```text\ntest -e new.txt && echo checked\n```\n\npassed in <d>\n\n"
            "### Changes\n\n```text\n new.txt | 1 +\n 1 file changed, 1 insertion(+)\n```\n");
  // The check ran after the change was committed: its output is not part of the patch.
  EXPECT_EQ(Slurp(Out() + "/tasks/alpha/changes.patch").find("checked"), std::string::npos);
  // While only slow's check ran, the heartbeat repeated the line naming it.
  size_t naming_slow = 0;
  for (const std::string& l : Lines(out.err)) {
    if (l.starts_with("batch: 4/5 done, 1 running, ") &&
        l.find("; running: slow ") != std::string::npos) {
      ++naming_slow;
    }
  }
  EXPECT_GE(naming_slow, 2u) << out.err;
  EXPECT_NE(out.err.find("batch: 5/5 done, 0 running, 2 succeeded, 2 failed, 1 no_change, "
                         "0 interrupted, 0 skipped, 600 tokens\n"),
            std::string::npos)
      << out.err;

  RunOutput md = Batch({"report", Out()});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_TRUE(
      md.out.starts_with("## agentexec batch\n\n5 tasks: 2 succeeded, 2 failed, 1 no "
                         "change, 0 interrupted, 0 skipped; 600 tokens\n"))
      << md.out;
  EXPECT_NE(md.out.find("| beta | failed | check\\_failed | exit 3 in "), std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("| same | no\\_change | no\\_change |  | 0 | 120 | "), std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("| slow | failed | check\\_failed | timed out after "), std::string::npos)
      << md.out;
  RunOutput junit = Batch({"report", Out(), "--format", "junit"});
  ASSERT_EQ(junit.exit_code, 0) << junit.err;
  EXPECT_NE(junit.out.find("<failure message=\"failed (check_failed); check: exit 3 in "),
            std::string::npos)
      << junit.out;
  EXPECT_NE(junit.out.find("type=\"check_failed\">the check exited 3\n\ncheck output (tail):\n"
                           "it broke\n</failure>"),
            std::string::npos)
      << junit.out;
  EXPECT_NE(junit.out.find("<property name=\"check.exit_code\" value=\"3\"/>"), std::string::npos);
  ASSERT_NO_FATAL_FAILURE(
      ExpectJsonReportHas(R"("summary":{"total":5,"succeeded":2,"failed":2,"no_change":1,)"
                          R"("interrupted":0,"skipped":0,"tokens":600})"));

  // --resume runs none of them again: no_change is an end like failed.
  RunOutput resumed = Batch({"run", manifest, "--out", Out(), "--resume"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Lines(Slurp(Out() + "/results.jsonl")).size(), 5u);
}

TEST_F(BatchTest, ReportFormatsEscapeWhatTheTasksSaid) {
  const std::string dir = ws_.root() + "/made";
  fs::create_directories(dir);
  ws_.WriteFile(
      "made/results.jsonl",
      R"j({"id":"b_1","status":"failed","exit_code":1,"error_code":"model_error","error":"bad <xml> & \"quotes\"\u0001","tokens":5,"duration_ms":1500,"files_changed":0,"branch":"agentexec/b_1","answer":"","reason":null}
{"id":"a","status":"succeeded","exit_code":0,"error_code":null,"error":null,"tokens":10,"duration_ms":90000,"files_changed":2,"branch":"agentexec/a","answer":"Fixed | the *bug* in <b>x</b> [link](u)","reason":null}
{"id":"c","status":"skipped","exit_code":null,"error_code":null,"error":null,"tokens":0,"duration_ms":0,"files_changed":0,"branch":null,"answer":"","reason":"max-failures"}
)j");
  RunOutput md = Batch({"report", dir});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(
      md.out,
      "## agentexec batch\n\n"
      "3 tasks: 1 succeeded, 1 failed, 0 no change, 0 interrupted, 1 skipped; 15 tokens\n\n"
      "| Task | Status | Reason | Check | Files changed | Tokens | Duration | Branch | Answer "
      "|\n"
      "| --- | --- | --- | --- | ---: | ---: | ---: | --- | --- |\n"
      "| a | succeeded |  |  | 2 | 10 | 1m30s | agentexec/a (not pushed) | Fixed \\| the "
      "\\*bug\\* in &lt;b&gt;x&lt;/b&gt; \\[link\\](u) |\n"
      "| b\\_1 | failed (exit 1) | model\\_error |  | 0 | 5 | 1s500ms |  |  |\n"
      "| c | skipped | max-failures |  |  |  |  |  |  |\n");

  RunOutput junit = Batch({"report", dir, "--format", "junit"});
  ASSERT_EQ(junit.exit_code, 0) << junit.err;
  const std::string xml = ws_.WriteFile("report.xml", junit.out);
  const std::string py =
      "import sys, xml.etree.ElementTree as E\n"
      "r = E.parse(sys.argv[1]).getroot()\n"
      "s = r.find('testsuite')\n"
      "print(r.get('tests'), r.get('failures'), r.get('skipped'))\n"
      "for c in s.findall('testcase'):\n"
      "  f = c.find('failure')\n"
      "  k = c.find('skipped')\n"
      "  print(c.get('name'), c.get('time'), f.get('message') + '|' + f.text if f is not None "
      "else (k.get('message') if k is not None else 'ok'))\n";
  const std::string pyfile = ws_.WriteFile("check.py", py);
  FILE* p = ::popen(("python3 '" + pyfile + "' '" + xml + "'").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[1024] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, p);
  EXPECT_EQ(::pclose(p), 0) << junit.out;
  EXPECT_EQ(std::string(buf, n),
            "3 1 1\n"
            "a 90.000 ok\n"
            "b_1 1.500 failed (model_error): exit 1|bad <xml> & \"quotes\"\xEF\xBF\xBD\n"
            "c 0.000 max-failures\n");
}

}  // namespace
}  // namespace ae::e2e
