// The git agentexec runs itself (engine/review/git.cc): a repository whose configuration,
// attributes and hooks name a program, and an environment whose GIT_* variables do, make
// plain git run it (checked first, so the fixture is live); the hardened git runs none of
// it for any command `agentexec review` uses, and still answers.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/review/git.h"
#include "tests/support/agentexec_runner.h"

namespace ae::e2e {
namespace {

using namespace std::string_literals;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class GitHardening : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = ws_.repo();
    marker_ = ws_.root() + "/ran";
    const std::string prog =
        ws_.WriteFile("prog", "#!/bin/sh\necho \"$1\" >> " + marker_ + "\nexec cat\n");
    std::filesystem::permissions(prog, std::filesystem::perms::owner_all);
    std::filesystem::create_directories(ws_.root() + "/hooks");
    const std::string hook =
        ws_.WriteFile("hooks/post-index-change", "#!/bin/sh\necho hook >> " + marker_ + "\n");
    std::filesystem::permissions(hook, std::filesystem::perms::owner_all);
    Sh("printf 'a\\n' > a.py && printf 'm\\n' > b.md && printf 't\\n' > c.txt && "
       "printf '*.py diff=x filter=f\\n*.md filter=a.b\\n*.txt filter=inc\\n' > .gitattributes && "
       "git add -A && git commit -qm one");
    // A driver defined in an included file is listed (and emptied) like the others.
    const std::string included =
        ws_.WriteFile("included", "[filter \"inc\"]\n\tclean = " + prog + " inc-clean\n");
    for (const auto& [key, value] :
         std::vector<std::pair<std::string, std::string>>{{"core.fsmonitor", prog + " fsmonitor"},
                                                          {"core.pager", prog + " pager"},
                                                          {"diff.external", prog + " external"},
                                                          {"diff.x.textconv", prog + " textconv"},
                                                          {"diff.x.command", prog + " command"},
                                                          {"filter.f.clean", prog + " clean"},
                                                          {"filter.f.smudge", prog + " smudge"},
                                                          {"filter.f.required", "true"},
                                                          {"filter.a.b.process", prog + " process"},
                                                          {"log.showSignature", "true"},
                                                          {"gpg.program", prog + " gpg"},
                                                          {"core.hooksPath", ws_.root() + "/hooks"},
                                                          {"include.path", included}}) {
      Sh("git config '" + key + "' '" + value + "'");
    }
    Sh("printf 'b\\n' >> a.py && printf 'u\\n' >> c.txt && printf 'new\\n' > untracked.py");
    // A hostile environment as well (restored in TearDown).
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"GIT_EXTERNAL_DIFF", prog + " env-external"},
             {"GIT_PAGER", prog + " env-pager"},
             {"GIT_CONFIG_PARAMETERS", "'core.fsmonitor=" + prog + " env-params'"},
             {"GIT_CONFIG_COUNT", "1"},
             {"GIT_CONFIG_KEY_0", "diff.x.textconv"},
             {"GIT_CONFIG_VALUE_0", prog + " env-count"}}) {
      ::setenv(name.c_str(), value.c_str(), 1);
      set_.push_back(name);
    }
  }
  void TearDown() override {
    for (const std::string& name : set_) ::unsetenv(name.c_str());
  }
  void Sh(const std::string& cmd) {
    // Exported, so that the identity reaches every command of a chain (a prefix lands on
    // its first command only): a fresh machine has no git identity of its own.
    const std::string full = "cd '" + repo_ +
                             "' && export GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t "
                             "GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t "
                             "GIT_COMMITTER_EMAIL=t@example.invalid && " +
                             cmd;
    ASSERT_EQ(std::system(full.c_str()), 0) << full;
  }
  std::string Ran() {
    std::string ran = Read(marker_);
    std::filesystem::remove(marker_);
    return ran;
  }

  Workspace ws_;
  std::string repo_, marker_;
  std::vector<std::string> set_;
};

// What `agentexec review` asks (engine/review/selection.cc), diffs with its options.
const std::vector<std::vector<std::string>> kReviewCommands = {
    {"status", "--porcelain"},
    {"diff", "--no-color", "--no-ext-diff", "--no-textconv", "HEAD"},
    {"show", "--no-color", "--no-ext-diff", "--no-textconv", "HEAD"},
    {"log", "-p", "-1", "--no-ext-diff", "--no-textconv"},
    {"ls-files", "--others", "--exclude-standard", "-z"},
    {"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-index", "--", "/dev/null",
     "untracked.py"},
};

TEST_F(GitHardening, PlainGitRunsTheProgramsTheFixtureNames) {
  Sh("git status >/dev/null 2>&1; git diff HEAD >/dev/null 2>&1; git show HEAD >/dev/null 2>&1;"
     " true");
  const std::string ran = Ran();
  for (const char* role : {"env-params", "env-count", "clean", "smudge", "hook", "inc-clean"}) {
    EXPECT_NE(ran.find(role), std::string::npos) << role << " in:\n" << ran;
  }
}

TEST_F(GitHardening, ReviewGitRunsNoneAndStillAnswers) {
  std::unique_ptr<Git> git = MakeSystemGit(repo_);
  std::string all;
  for (const std::vector<std::string>& args : kReviewCommands) {
    Result<GitRun> run = git->Run(args);
    ASSERT_TRUE(run.ok()) << run.message();
    EXPECT_LE(run->exit_code, 1) << args[0] << ": " << run->error_text;
    all += run->out;
  }
  EXPECT_EQ(Read(marker_), "");
  EXPECT_NE(all.find(" M a.py\n M c.txt\n?? untracked.py\n"), std::string::npos) << all;
  EXPECT_NE(all.find("+b\n"), std::string::npos) << all;
  EXPECT_NE(all.find("+new\n"), std::string::npos) << all;
}

TEST(HardenedGitArgs, EveryFilterDriverIsEmptiedAndAnInexpressibleOneRefused) {
  Result<std::vector<std::string>> args =
      HardenedGitArgs("filter.f.clean\0filter.f.smudge\0filter.a.b.process\0"s);
  ASSERT_TRUE(args.ok()) << args.message();
  std::string joined;
  for (const std::string& a : *args) joined += a + " ";
  EXPECT_NE(joined.find("-c filter.a.b.clean= -c filter.a.b.smudge= -c filter.a.b.process= -c "
                        "filter.a.b.required=false -c filter.f.clean= -c filter.f.smudge= -c "
                        "filter.f.process= -c filter.f.required=false "),
            std::string::npos)
      << joined;
  EXPECT_EQ(args->front(), "--no-pager");
  Result<std::vector<std::string>> bad = HardenedGitArgs("filter.x=y.clean\0"s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(),
            "cannot run git safely here: the filter driver 'x=y' in the repository's "
            "configuration cannot be switched off (its name holds '=')");
}

TEST(HardenedGitEnv, KeepsOnlyTheRepositoryLocationAmongGitVariables) {
  const char* env[] = {"PATH=/bin",          "GIT_DIR=/r/.git",       "GIT_EXTERNAL_DIFF=x",
                       "GIT_PAGER=x",        "GIT_SSH_COMMAND=x",     "GIT_EXEC_PATH=/evil",
                       "GIT_CONFIG_COUNT=1", "GIT_INDEX_FILE=/r/idx", nullptr};
  std::vector<std::string> out = HardenedGitEnv(env);
  EXPECT_EQ(out, (std::vector<std::string>{"PATH=/bin", "GIT_DIR=/r/.git", "GIT_INDEX_FILE=/r/idx",
                                           "GIT_CONFIG_NOSYSTEM=1", "GIT_ATTR_NOSYSTEM=1",
                                           "GIT_TERMINAL_PROMPT=0", "GIT_NO_LAZY_FETCH=1",
                                           "GIT_OPTIONAL_LOCKS=0"}));
}

}  // namespace
}  // namespace ae::e2e
