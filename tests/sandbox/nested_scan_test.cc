// The search for nested repositories (sandbox/nested_walk.h, NestedScan in policy.h): no
// bound after which a repository is silently writable, and a run that searches once the model
// announces a tool call and waits for the search before running it.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/cancel.h"
#include "sandbox/nested_walk.h"
#include "sandbox/paths.h"
#include "sandbox/policy.h"
#include "test_util.h"

extern char** environ;

namespace ae::sandbox {
namespace {

using testing::ExecArray;
using testing::Exists;
using testing::ReadText;
using testing::RunProcess;
using testing::ScopedEnv;
using testing::ScratchDir;
using testing::Sh;
using testing::WorkspaceWriteSettings;
using testing::WriteText;

bool Listed(const Policy& policy, const std::string& path) {
  const auto& c = policy.read_only_carveouts;
  return std::find(c.begin(), c.end(), path) != c.end();
}

// `count` empty directories below `dir`, a hundred per parent.
void MakeTree(const std::string& dir, int count) {
  for (int i = 0; i < count; ++i) {
    const std::string parent = dir + "/d" + std::to_string(i / 100);
    if (i % 100 == 0) {
      ASSERT_EQ(::mkdir(parent.c_str(), 0755), 0);
    }
    ASSERT_EQ(::mkdir((parent + "/e" + std::to_string(i % 100)).c_str(), 0755), 0);
  }
}

// A directory for the large trees, used as $TMPDIR: on tmpfs where there is one, since a disk
// under load takes minutes to make and remove tens of thousands of directories.
class TreeDir {
 public:
  explicit TreeDir(const std::string& fallback) {
    std::string tmpl = "/dev/shm/ae-test-XXXXXX";
    const char* made = ::mkdtemp(tmpl.data());
    if (made != nullptr) {
      path_ = made;
    } else {
      path_ = fallback + "/trees";
      EXPECT_EQ(::mkdir(path_.c_str(), 0755), 0);
    }
  }
  ~TreeDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TreeDir(const TreeDir&) = delete;
  TreeDir& operator=(const TreeDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class NestedScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = dir_.path();
    ws_ = base_ + "/ws";
    Sh("mkdir ws && git init -q ws", base_);
  }
  // The workspace's policy with $TMPDIR naming `tmpdir`, and not left out, for this call only.
  Result<Policy> BuiltWithTmpdir(const std::string& tmpdir) {
    ScopedEnv set("TMPDIR", tmpdir.c_str());
    Settings s = WorkspaceWriteSettings();
    s.exclude_tmpdir_env_var = false;
    return BuildPolicy(s, ws_);
  }
  ScratchDir dir_;
  std::string base_, ws_;
};

// Forty levels, a repository beside the way down at each: past the old bound (12 levels), and
// past the descriptors the walk keeps open (32), so it comes back up through directories it
// closed and opens them again.
TEST_F(NestedScanTest, RepositoriesAtAnyDepthAreCarvedOut) {
  Sh("p=deep; for i in $(seq 1 40); do mkdir -p $p/r/.git; p=$p/c; done; mkdir -p $p/.agentexec",
     ws_);
  Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), ws_);
  ASSERT_TRUE(p.ok()) << p.message();
  std::string at = ws_ + "/deep";
  for (int level = 1; level <= 40; ++level, at += "/c") {
    EXPECT_TRUE(Listed(*p, at + "/r/.git")) << "level " << level;
  }
  EXPECT_TRUE(Listed(*p, at + "/.agentexec"));
  EXPECT_TRUE(p->warnings.empty());
}

// A directory without subdirectories can still hold a `.git` file naming a git dir elsewhere
// (a submodule or worktree of a flat repository): the walk lists it all the same.
TEST_F(NestedScanTest, AGitfileInALeafDirectoryProtectsItsGitDir) {
  Sh("mkdir -p sub/leaf store && echo 'gitdir: ../../store' > sub/leaf/.git", ws_);
  Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), ws_);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_TRUE(Listed(*p, ws_ + "/sub/leaf/.git"));
  EXPECT_TRUE(Listed(*p, ws_ + "/store"));
}

TEST_F(NestedScanTest, TheWalkFollowsNoSymlinkAndEntersNoGitOrAgentexec) {
  Sh("git init -q ../outside/repo && ln -s ../outside out && ln -s . loop && ln -s / slash && "
     "mkdir -p sub/.git/deep/.git sub/.agentexec/x/.git",
     ws_);
  Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), ws_);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_TRUE(Listed(*p, ws_ + "/sub/.git"));
  EXPECT_TRUE(Listed(*p, ws_ + "/sub/.agentexec"));
  for (const std::string& c : p->read_only_carveouts) {
    EXPECT_EQ(c.find("/outside/"), std::string::npos) << c;
    EXPECT_EQ(c.find("/out/"), std::string::npos) << c;
    EXPECT_EQ(c.find("/loop/"), std::string::npos) << c;
    EXPECT_EQ(c.find("/deep/"), std::string::npos) << c;
    EXPECT_EQ(c.find("/x/"), std::string::npos) << c;
  }
}

// $TMPDIR (like /tmp) was searched as far as 20,000 directories and then, without a word, no
// further: a repository beyond was writable. Now there is no such bound.
TEST_F(NestedScanTest, ARepositoryInTmpdirPastTheOldCountIsProtected) {
  TreeDir tmpdir(base_);
  Sh("seq 0 20000 | sed 's/^/d/' | xargs mkdir && git init -q d0/repo", tmpdir.path());
  Result<Policy> p = BuiltWithTmpdir(tmpdir.path());
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_TRUE(Listed(*p, ResolvePath(tmpdir.path()) + "/d0/repo/.git"));
  EXPECT_TRUE(p->warnings.empty());
}

// The workspace inside $TMPDIR is walked on its own and not again with $TMPDIR: its nested
// repository is found, and listed once.
TEST_F(NestedScanTest, ARootInsideAnotherIsSearched) {
  Sh("git init -q a/nested && git init -q ../beside", ws_);
  Result<Policy> p = BuiltWithTmpdir(base_);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->writable_roots, (std::vector<std::string>{ws_, base_}));
  EXPECT_EQ(std::count(p->read_only_carveouts.begin(), p->read_only_carveouts.end(),
                       ws_ + "/a/nested/.git"),
            1);
  EXPECT_TRUE(Listed(*p, base_ + "/beside/.git"));
}

TEST_F(NestedScanTest, TheBackgroundSearchCompletesThePolicyAsBuildPolicyDoes) {
  Sh("git init -q a/b/nested && mkdir -p c/.agentexec && echo 'gitdir: ../store' > c/.git && "
     "mkdir store",
     ws_);
  Result<Policy> whole = BuildPolicy(WorkspaceWriteSettings(), ws_);
  ASSERT_TRUE(whole.ok()) << whole.message();
  Result<Policy> base = BuildPolicyWithoutNested(WorkspaceWriteSettings(), ws_);
  ASSERT_TRUE(base.ok()) << base.message();
  EXPECT_FALSE(Listed(*base, ws_ + "/a/b/nested/.git"));
  CancelToken cancel;
  NestedScan scan(*base, cancel);
  scan.Start();
  scan.Start();  // once
  Policy completed = *base;
  ASSERT_TRUE(scan.Finish(&completed).ok());
  const std::set<std::string> expected(whole->read_only_carveouts.begin(),
                                       whole->read_only_carveouts.end());
  EXPECT_EQ(std::set<std::string>(completed.read_only_carveouts.begin(),
                                  completed.read_only_carveouts.end()),
            expected);
  EXPECT_EQ(completed.read_only_carveouts.size(), expected.size());  // no repeats
  EXPECT_EQ(completed.carveout_ids.size(), whole->carveout_ids.size());
  EXPECT_TRUE(Listed(completed, ws_ + "/a/b/nested/.git"));
  EXPECT_TRUE(Listed(completed, ws_ + "/c/.agentexec"));
  EXPECT_TRUE(Listed(completed, ws_ + "/store"));
  // Once: a second call adds nothing.
  ASSERT_TRUE(scan.Finish(&completed).ok());
  EXPECT_EQ(completed.read_only_carveouts.size(), expected.size());
}

// Nothing is searched until something needs the carve-outs (Start, or else Finish): a
// repository made after the scan was set up, as before a session's first tool call, is found
// either way, and a run that calls no tool searches nothing.
TEST_F(NestedScanTest, TheTreeIsSearchedAsItIsWhenStartedNotWhenSetUp) {
  for (const bool start : {true, false}) {
    const std::string dir = start ? "started" : "finished";
    Sh("mkdir " + dir, ws_);
    Result<Policy> base = BuildPolicyWithoutNested(WorkspaceWriteSettings(), ws_);
    ASSERT_TRUE(base.ok()) << base.message();
    CancelToken cancel;
    NestedScan scan(*base, cancel);
    Sh("git init -q " + dir + "/late", ws_);
    if (start) scan.Start();
    Policy policy = *base;
    ASSERT_TRUE(scan.Finish(&policy).ok());
    EXPECT_TRUE(Listed(policy, ws_ + "/" + dir + "/late/.git")) << dir;
  }
}

TEST_F(NestedScanTest, ACancelledSearchLeavesThePolicyIncompleteAndSaysSo) {
  Sh("git init -q nested", ws_);
  Result<Policy> base = BuildPolicyWithoutNested(WorkspaceWriteSettings(), ws_);
  ASSERT_TRUE(base.ok()) << base.message();
  CancelToken cancel;
  cancel.Cancel(CancelReason::kSigint);
  NestedScan scan(*base, cancel);
  Policy policy = *base;
  Status finished = scan.Finish(&policy);
  ASSERT_FALSE(finished.ok());
  EXPECT_EQ(finished.message(),
            "sandbox: the search for nested repositories was cancelled before it was complete");
  EXPECT_FALSE(Listed(policy, ws_ + "/nested/.git"));
  EXPECT_EQ(policy.read_only_carveouts, base->read_only_carveouts);
}

// A search that runs out of descriptors has not seen the whole tree: the policy is not
// completed, and the error says why (BuildPolicy likewise), so no command runs with a
// repository the search did not reach left writable.
TEST_F(NestedScanTest, ASearchOutOfDescriptorsLeavesThePolicyIncompleteAndSaysSo) {
  Sh("for i in $(seq 1 40); do p=t$i; for j in $(seq 1 40); do p=$p/c; done; mkdir -p $p/.git; "
     "done",
     ws_);
  Result<Policy> base = BuildPolicyWithoutNested(WorkspaceWriteSettings(), ws_);
  ASSERT_TRUE(base.ok()) << base.message();
  const std::string expected =
      "sandbox: the search for nested repositories ran out of descriptors or memory before it "
      "was complete; raise the open-file limit (ulimit -n) or free memory, and run again";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A threaded walk first: UBSan checks the dynamic type of the walk's thread state the
    // first time one runs, with a pipe(2) it cannot have once descriptors run out.
    WalkNested(
        ws_, {}, [] { return false; }, [](NestedHit, const std::string&) {}, 2);
    // Fewer descriptors than the frames one walk keeps open (none above stdio left open).
    for (int fd = 3; fd < 4096; ++fd) ::close(fd);
    struct rlimit limit = {20, 20};
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(2);
    const CancelToken never_cancelled;
    NestedScan scan(*base, never_cancelled);
    Policy policy = *base;
    const Status finished = scan.Finish(&policy);
    if (finished.ok() || finished.message() != expected) ::_exit(3);
    if (policy.read_only_carveouts != base->read_only_carveouts) ::_exit(4);
    Result<Policy> built = BuildPolicy(WorkspaceWriteSettings(), ws_);
    if (built.ok() || built.message() != expected) ::_exit(5);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(NestedScanTest, NothingToSearchOutsideWorkspaceWrite) {
  Sh("git init -q nested", ws_);
  for (Mode mode : {Mode::kReadOnly, Mode::kDangerFullAccess}) {
    Settings s = WorkspaceWriteSettings();
    s.mode = mode;
    Result<Policy> base = BuildPolicyWithoutNested(s, ws_);
    ASSERT_TRUE(base.ok()) << base.message();
    CancelToken cancel;
    cancel.Cancel(CancelReason::kSigint);  // nothing to cancel either
    NestedScan scan(*base, cancel);
    Policy policy = *base;
    EXPECT_TRUE(scan.Finish(&policy).ok());
    EXPECT_TRUE(policy.read_only_carveouts.empty());
  }
}

// ---------------------------------------------------------------- whole runs

// A run of the real binary on the scripted provider in ws_, with the host's /tmp and $TMPDIR
// (trees_) shared (sandbox_workspace_write.shared_tmp): writable roots that hold a large tree
// to search, as they were before each run had its own /tmp.
class NestedScanRunTest : public NestedScanTest {
 protected:
  void SetUp() override {
    NestedScanTest::SetUp();
    Sh("mkdir home agentexec-home", base_);
    trees_.emplace(base_);
  }
  std::vector<std::string> Argv(const std::string& turns_json) {
    const std::string script = base_ + "/turns.json";
    WriteText(script, turns_json);
    return {AGENTEXEC_BIN,
            "-c",
            "model_provider=scripted",
            "-c",
            "model_providers.scripted.script=\"" + script + "\"",
            "--json",
            "-s",
            "workspace-write",
            "-c",
            "sandbox_workspace_write.shared_tmp=true",
            "go"};
  }
  std::vector<std::pair<std::string, std::string>> Env() {
    return {{"HOME", base_ + "/home"},
            {"AGENTEXEC_HOME", base_ + "/agentexec-home"},
            {"TMPDIR", trees_->path()}};
  }
  std::optional<TreeDir> trees_;
};

// The model's first answer, a tool call, arrives whole at once: the search it starts has
// $TMPDIR's 20,000 directories ahead of it, the command waits for it, and the nested
// repository is read-only.
TEST_F(NestedScanRunTest, ACommandCannotWriteANestedGitWhenTheModelAnswersAtOnce) {
  MakeTree(trees_->path(), 20000);
  Sh("mkdir -p sub && git init -q sub/nested", ws_);
  const std::string turns = R"({"turns":[
    {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"echo evil > sub/nested/.git/hooks/pre-commit; echo status=$?"}}]},
    {"items":[{"type":"message","text":"Done."}]}]})";
  testing::Ran ran = RunProcess(Argv(turns), ws_, Env());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ran.output.find("sub/nested/.git/hooks/pre-commit: Read-only file "
                            "system\\nstatus=1\\n"),
            std::string::npos)
      << ran.output;
  EXPECT_FALSE(Exists(ws_ + "/sub/nested/.git/hooks/pre-commit"));
}

// When a directory was last listed, or 2000-01-01 if never since `Age` (its atime; a listing
// moves an atime older than the directory's mtime, also under relatime).
struct timespec ListedAt(const std::string& dir) {
  struct stat st {};
  EXPECT_EQ(::stat(dir.c_str(), &st), 0) << dir;
  return st.st_atim;
}
void Age(const std::string& dir) {
  const struct timespec times[2] = {{946684800, 0}, {UTIME_OMIT, UTIME_OMIT}};
  ASSERT_EQ(::utimensat(AT_FDCWD, dir.c_str(), times, 0), 0) << dir;
}

// A run whose model calls no tool searches nothing: a directory of the workspace with a
// subdirectory (so the search would list it) is not listed. A run with a tool call lists it.
// The workspace is in /var/tmp, the only root, so that no other test's run searches it (every
// run searches /tmp, where the other scratch directories are).
TEST_F(NestedScanRunTest, ARunThatCallsNoToolSearchesNothing) {
  const ScratchDir outside("ae-probe", "/var/tmp");
  const std::string& ws = outside.path();
  Sh("git init -q . && mkdir -p probe/sub control/sub", ws);
  Age(ws + "/control");
  Sh("ls control >/dev/null", ws);
  if (ListedAt(ws + "/control").tv_sec == 946684800) {
    GTEST_SKIP() << ws << " does not record when a directory is listed (noatime)";
  }
  auto argv = [&](const std::string& turns) {
    std::vector<std::string> args = Argv(turns);
    args.insert(args.end() - 1, {"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c",
                                 "sandbox_workspace_write.exclude_tmpdir_env_var=true"});
    return args;
  };
  Age(ws + "/probe");
  const std::string message = R"({"turns":[{"items":[{"type":"message","text":"Hi."}]}]})";
  testing::Ran ran = RunProcess(argv(message), ws, Env());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ListedAt(ws + "/probe").tv_sec, 946684800) << "a run without a tool call searched";

  const std::string command = R"({"turns":[
    {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"true"}}]},
    {"items":[{"type":"message","text":"Done."}]}]})";
  ran = RunProcess(argv(command), ws, Env());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ListedAt(ws + "/probe").tv_sec, 946684800) << "a run with a tool call did not search";
}

// SIGINT while the first tool call waits for a search of 60,000 directories: the run ends
// as interrupted (exit 130) and the command never runs on the incomplete policy.
TEST_F(NestedScanRunTest, SigintDuringTheSearchIsExit130AndNoCommandRuns) {
  MakeTree(trees_->path(), 60000);
  const std::string turns = R"({"turns":[
    {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"touch ran.txt"}}]},
    {"items":[{"type":"message","text":"Done."}]}]})";
  const std::vector<std::string> args = Argv(turns);
  std::vector<char*> argv = ExecArray(args);
  std::vector<std::string> env_strings = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};
  for (const auto& [k, v] : Env()) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp = ExecArray(env_strings);
  const std::string out_path = base_ + "/out.jsonl";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addchdir_np(&actions, ws_.c_str());
  pid_t pid = 0;
  ASSERT_EQ(::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  // The header is out and the model's answer (a tool call) follows at once: its announcement
  // starts the search and the run waits for it. The signal goes while the search's threads
  // are alive, before the command could have run.
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  bool searching = false;
  for (int i = 0; i < 20000 && !searching; ++i) {
    const std::string out = ReadText(out_path);
    if (out.find("command_execution") != std::string::npos) break;
    if (out.find(R"({"type":"turn.started"})") != std::string::npos) {
      std::error_code ec;
      searching = std::distance(std::filesystem::directory_iterator(task_dir, ec),
                                std::filesystem::directory_iterator()) >= 2;
    }
    if (!searching) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(searching) << "the search was over before the signal: " << ReadText(out_path);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << ReadText(out_path);
  const std::string out = ReadText(out_path);
  EXPECT_NE(out.find(R"("type":"turn.failed","error":{"message":"interrupted by SIGINT")"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("command_execution"), std::string::npos) << out;
  EXPECT_FALSE(Exists(ws_ + "/ran.txt"));
}

}  // namespace
}  // namespace ae::sandbox
