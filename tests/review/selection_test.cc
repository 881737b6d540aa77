// The diff selection against a fake git: which git commands each target runs, what the model
// is told, and the errors (missing base, shallow clone, no common history, unknown commit,
// nothing to review), each exact.
#include "engine/review/selection.h"

#include <gtest/gtest.h>

#include "engine/review/review_prompt.h"
#include "tests/review/fake_git.h"

namespace ae {
namespace {

const std::string kMb = "1111111111111111111111111111111111111111";
const std::string kMain = "2222222222222222222222222222222222222222";
const std::string kDiff =
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a\n+b\n";

const std::string kDiffCommand = "diff --no-color --no-ext-diff --no-textconv ";
const std::string kUntracked = "-C /work/repo ls-files --others --exclude-standard -z";

// The git command the selection resolves `ref` to a commit with.
std::string Verify(const std::string& ref) {
  return "rev-parse --verify --quiet --end-of-options " + ref + "^{commit}";
}

// What SelectChange refuses `target` with, or a note that it selected a change after all.
std::string Refusal(FakeGit git, const ReviewTarget& target) {
  Result<ChangeSelection> sel = SelectChange(git, target, 1 << 20);
  return sel.ok() ? "(no refusal: a change was selected)" : sel.message();
}

FakeGit Repo() {
  FakeGit git;
  git.On("rev-parse --show-toplevel", 0, "/work/repo\n");
  return git;
}

// A repository whose branch `main` is kMain, and HEAD shares no merge base with it; `shallow`
// is what git says of the clone.
FakeGit WithoutMergeBase(const std::string& shallow) {
  FakeGit git = Repo();
  git.On(Verify("main"), 0, kMain + "\n");
  git.On("merge-base HEAD " + kMain, 1);
  git.On("rev-parse --is-shallow-repository", 0, shallow);
  return git;
}

// The uncommitted change: `git diff HEAD` prints `diff`, and ls-files lists `untracked`
// (NUL-separated).
FakeGit Uncommitted(const std::string& diff, const std::string& untracked) {
  FakeGit git = Repo();
  git.On(Verify("HEAD"), 0, kMain + "\n");
  git.On(kDiffCommand + "HEAD", 0, diff);
  git.On(kUntracked, 0, untracked);
  return git;
}

TEST(ReviewSelection, BaseUsesTheMergeBaseAgainstTheWorkingTree) {
  FakeGit git = Repo();
  git.On(Verify("main"), 0, kMain + "\n");
  git.On("merge-base HEAD " + kMain, 0, kMb + "\n");
  git.On(kDiffCommand + kMb, 0, kDiff);
  Result<ChangeSelection> sel = SelectChange(git, {ReviewTargetKind::kBase, "main"}, 1 << 20);
  ASSERT_TRUE(sel.ok()) << sel.message();
  EXPECT_EQ(sel->repo_root, "/work/repo");
  EXPECT_EQ(sel->diff, kDiff);
  EXPECT_FALSE(sel->diff_cut);
  EXPECT_EQ(sel->inspect_command, "git diff " + kMb);
  EXPECT_EQ(ReviewRequest(*sel, std::string("Fix totals"), std::string("Focus on errors.")),
            "Review this change. Its title: \"Fix totals\".\n\n"
            "The change to review is everything that differs between the merge base of HEAD with "
            "the base branch 'main' (commit " +
                kMb +
                ") and the working tree: the commits on this branch and any uncommitted edits to "
                "tracked files.\n"
                "The repository root is /work/repo. To see the change again: `git diff " +
                kMb + "`.\n\n<diff>\n" + kDiff +
                "</diff>\n\nThe user's review instructions (they take precedence over the general "
                "guidelines):\nFocus on errors.\n");
}

TEST(ReviewSelection, BaseFallsBackToTheRemoteTrackingBranch) {
  FakeGit git = Repo();
  git.On(Verify("main"), 1);
  git.On(Verify("refs/remotes/origin/main"), 0, kMain + "\n");
  git.On("merge-base HEAD " + kMain, 0, kMb + "\n");
  git.On(kDiffCommand + kMb, 0, kDiff);
  Result<ChangeSelection> sel = SelectChange(git, {ReviewTargetKind::kBase, "main"}, 1 << 20);
  ASSERT_TRUE(sel.ok()) << sel.message();
  EXPECT_NE(sel->description.find("base branch 'origin/main'"), std::string::npos);
}

TEST(ReviewSelection, MissingBaseSaysHowToFetchIt) {
  FakeGit git = Repo();
  git.On(Verify("nosuch"), 1);
  git.On(Verify("refs/remotes/origin/nosuch"), 1);
  EXPECT_EQ(Refusal(git, {ReviewTargetKind::kBase, "nosuch"}),
            "base branch 'nosuch' not found: neither 'nosuch' nor 'origin/nosuch' names a commit "
            "in this repository. Fetch it first (`git fetch origin nosuch`; GitHub "
            "actions/checkout: `fetch-depth: 0`), or check the name");
}

TEST(ReviewSelection, ShallowCloneWithoutTheMergeBase) {
  EXPECT_EQ(Refusal(WithoutMergeBase("true\n"), {ReviewTargetKind::kBase, "main"}),
            "cannot find the merge base of HEAD and 'main': this is a shallow clone and the "
            "common history is not in it; fetch the full history: `git fetch --unshallow` "
            "(GitHub actions/checkout: `fetch-depth: 0`; GitLab CI: `GIT_DEPTH: 0`)");
}

TEST(ReviewSelection, UnrelatedHistories) {
  EXPECT_EQ(Refusal(WithoutMergeBase("false\n"), {ReviewTargetKind::kBase, "main"}),
            "HEAD and 'main' have no common history (no merge base), so there is no change "
            "against it to review; pass the branch this work started from");
}

TEST(ReviewSelection, CommitUsesGitShow) {
  FakeGit git = Repo();
  git.On(Verify("abc123"), 0, kMain + "\n");
  git.On(
      "show --no-color --no-ext-diff --no-textconv --format=commit %H%nAuthor: %an <%ae>%n%n%B " +
          kMain,
      0, "commit " + kMain + "\n\n" + kDiff);
  Result<ChangeSelection> sel = SelectChange(git, {ReviewTargetKind::kCommit, "abc123"}, 1 << 20);
  ASSERT_TRUE(sel.ok()) << sel.message();
  EXPECT_EQ(sel->diff, "commit " + kMain + "\n\n" + kDiff);
  EXPECT_EQ(sel->inspect_command, "git show " + kMain);
  EXPECT_EQ(sel->description, "The change to review is what commit " + kMain +
                                  " introduced, compared with its parent.");
}

TEST(ReviewSelection, UnknownCommit) {
  FakeGit git = Repo();
  git.On(Verify("deadbeef"), 1);
  git.On("rev-parse --is-shallow-repository", 0, "false\n");
  EXPECT_EQ(Refusal(git, {ReviewTargetKind::kCommit, "deadbeef"}),
            "commit 'deadbeef' not found in this repository: check the SHA, or fetch it first "
            "(`git fetch origin <ref>`)");
}

TEST(ReviewSelection, UncommittedIncludesUntrackedFiles) {
  FakeGit git = Uncommitted(kDiff, std::string("new.py\0", 7));
  git.On("-C /work/repo diff --no-color --no-ext-diff --no-textconv --no-index -- /dev/null new.py",
         1, "diff --git a/new.py b/new.py\n+x\n");
  Result<ChangeSelection> sel = SelectChange(git, {ReviewTargetKind::kUncommitted, ""}, 1 << 20);
  ASSERT_TRUE(sel.ok()) << sel.message();
  EXPECT_EQ(sel->diff, kDiff + "diff --git a/new.py b/new.py\n+x\n");
}

TEST(ReviewSelection, NothingUncommittedIsAnError) {
  FakeGit git = Uncommitted("", "");
  EXPECT_EQ(Refusal(git, {ReviewTargetKind::kUncommitted, ""}),
            "nothing to review: there are no uncommitted changes (staged, unstaged or "
            "untracked); pass --base BRANCH to review a branch or --commit SHA to review a "
            "commit");
}

TEST(ReviewSelection, LongDiffIsCutAtALineAndThePromptSaysSo) {
  FakeGit git = Uncommitted("line one\nline two\n", "");
  Result<ChangeSelection> sel = SelectChange(git, {ReviewTargetKind::kUncommitted, ""}, 12);
  ASSERT_TRUE(sel.ok()) << sel.message();
  EXPECT_EQ(sel->diff, "line one\n");
  EXPECT_TRUE(sel->diff_cut);
  EXPECT_EQ(sel->diff_total_bytes, 18u);
  EXPECT_NE(ReviewRequest(*sel, {}, {})
                .find("The diff below is cut at 9 of its 18 bytes; read "
                      "the rest with the command above before concluding."),
            std::string::npos);
}

TEST(ReviewSelection, UntrackedFilesStopOnceOverBudget) {
  FakeGit git = Uncommitted("line one\nline two\n", std::string("a\0b\0", 4));
  Result<ChangeSelection> sel = SelectChange(git, {ReviewTargetKind::kUncommitted, ""}, 12);
  ASSERT_TRUE(sel.ok()) << sel.message();
  // No git run per untracked file once the budget is spent.
  EXPECT_EQ(git.calls().back(), kUntracked);
  EXPECT_NE(ReviewRequest(*sel, {}, {})
                .find("The diff below is cut at 9 of its more than 18 "
                      "bytes"),
            std::string::npos);
}

TEST(ReviewSelection, GitFailureIsReportedWithWhatGitSaid) {
  FakeGit git = Repo();
  git.On(Verify("HEAD"), 0, kMain + "\n");
  GitRun broken;
  broken.exit_code = 128;
  broken.error_text = "fatal: bad object HEAD\n";
  git.On(kDiffCommand + "HEAD", broken);
  EXPECT_EQ(Refusal(git, {ReviewTargetKind::kUncommitted, ""}),
            "`git diff --no-color --no-ext-diff --no-textconv HEAD` failed (exit 128): fatal: bad "
            "object HEAD");
}

TEST(ReviewSelection, NotARepository) {
  FakeGit git;
  git.On("rev-parse --show-toplevel", 128);
  EXPECT_EQ(Refusal(git, {ReviewTargetKind::kUncommitted, ""}),
            "agentexec review needs a git repository: run it inside one (or point -C at one)");
}

}  // namespace
}  // namespace ae
