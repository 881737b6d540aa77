#include "engine/review/selection.h"

#include <fmt/format.h>

#include "base/utf8.h"

namespace ae {
namespace {

// Diffs for a review: our own rendering, whatever the user's git config says about colour,
// external diff programs or text conversion filters.
const std::vector<std::string> kDiffOptions = {"--no-color", "--no-ext-diff", "--no-textconv"};

// The object name of an empty tree: what an unborn HEAD is compared against.
constexpr const char* kEmptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string> Args(std::initializer_list<std::string> head,
                              const std::vector<std::string>& more = {},
                              std::initializer_list<std::string> tail = {}) {
  std::vector<std::string> out(head);
  out.insert(out.end(), more.begin(), more.end());
  out.insert(out.end(), tail);
  return out;
}

Error GitFailed(const std::vector<std::string>& args, const GitRun& run) {
  std::string command = "git";
  for (const std::string& a : args) command += " " + a;
  std::string said = Trimmed(SanitizeUtf8(run.error_text));
  return MakeError(fmt::format("`{}` failed (exit {}){}", command, run.exit_code,
                               said.empty() ? "" : ": " + said));
}

// Runs a query whose only acceptable exit codes are those in `ok`.
Result<GitRun> Query(Git& git, const std::vector<std::string>& args,
                     std::initializer_list<int> ok = {0}) {
  Result<GitRun> run = git.Run(args);
  if (!run.ok()) return run.error();
  for (int code : ok) {
    if (run->exit_code == code) return run;
  }
  return GitFailed(args, *run);
}

// The commit a name resolves to, or nullopt when there is none by that name.
Result<std::optional<std::string>> ResolveCommit(Git& git, const std::string& name) {
  // "--end-of-options" keeps a name that starts with '-' from being read as an option.
  std::vector<std::string> args = {"rev-parse", "--verify", "--quiet", "--end-of-options",
                                   name + "^{commit}"};
  Result<GitRun> run = Query(git, args, {0, 1, 128});
  if (!run.ok()) return run.error();
  if (run->exit_code != 0) return std::optional<std::string>();
  return std::optional<std::string>(Trimmed(run->out));
}

Result<bool> IsShallow(Git& git) {
  Result<GitRun> run = Query(git, {"rev-parse", "--is-shallow-repository"});
  if (!run.ok()) return run.error();
  return Trimmed(run->out) == "true";
}

constexpr const char* kFetchHistoryHint =
    "fetch the full history: `git fetch --unshallow` (GitHub actions/checkout: `fetch-depth: 0`; "
    "GitLab CI: `GIT_DEPTH: 0`)";

Result<ChangeSelection> SelectBase(Git& git, const std::string& branch, ChangeSelection sel) {
  Result<std::optional<std::string>> base = ResolveCommit(git, branch);
  if (!base.ok()) return base.error();
  std::string base_name = branch;
  if (!*base && !branch.starts_with("origin/")) {
    // CI checkouts usually have the base only as a remote-tracking branch.
    base = ResolveCommit(git, "refs/remotes/origin/" + branch);
    if (!base.ok()) return base.error();
    base_name = "origin/" + branch;
  }
  if (!*base) {
    return MakeError(fmt::format(
        "base branch '{}' not found: neither '{}' nor 'origin/{}' names a commit in this "
        "repository. Fetch it first (`git fetch origin {}`; GitHub actions/checkout: "
        "`fetch-depth: 0`), or check the name",
        branch, branch, branch, branch));
  }
  Result<GitRun> merge_base = Query(git, {"merge-base", "HEAD", **base}, {0, 1});
  if (!merge_base.ok()) return merge_base.error();
  std::string mb = Trimmed(merge_base->out);
  if (merge_base->exit_code != 0 || mb.empty()) {
    Result<bool> shallow = IsShallow(git);
    if (!shallow.ok()) return shallow.error();
    if (*shallow) {
      return MakeError(fmt::format(
          "cannot find the merge base of HEAD and '{}': this is a shallow clone and the common "
          "history is not in it; {}",
          base_name, kFetchHistoryHint));
    }
    return MakeError(fmt::format(
        "HEAD and '{}' have no common history (no merge base), so there is no change against it "
        "to review; pass the branch this work started from",
        base_name));
  }
  Result<GitRun> diff = Query(git, Args({"diff"}, kDiffOptions, {mb}));
  if (!diff.ok()) return diff.error();
  sel.diff = std::move(diff->out);
  sel.diff_cut = diff->truncated;
  sel.inspect_command = "git diff " + mb;
  sel.description = fmt::format(
      "The change to review is everything that differs between the merge base of HEAD with the "
      "base branch '{}' (commit {}) and the working tree: the commits on this branch and any "
      "uncommitted edits to tracked files.",
      base_name, mb);
  if (sel.diff.empty()) {
    return MakeError(
        fmt::format("nothing to review: the working tree does not differ from the "
                    "merge base of HEAD and '{}' ({})",
                    base_name, mb));
  }
  return sel;
}

Result<ChangeSelection> SelectCommit(Git& git, const std::string& name, ChangeSelection sel) {
  Result<std::optional<std::string>> commit = ResolveCommit(git, name);
  if (!commit.ok()) return commit.error();
  if (!*commit) {
    Result<bool> shallow = IsShallow(git);
    if (!shallow.ok()) return shallow.error();
    return MakeError(fmt::format(
        "commit '{}' not found in this repository{}", name,
        *shallow ? fmt::format(" (a shallow clone): {}, or fetch that commit", kFetchHistoryHint)
                 : ": check the SHA, or fetch it first (`git fetch origin <ref>`)"));
  }
  const std::string& sha = **commit;
  Result<GitRun> show = Query(
      git, Args({"show"}, kDiffOptions, {"--format=commit %H%nAuthor: %an <%ae>%n%n%B", sha}));
  if (!show.ok()) return show.error();
  sel.diff = std::move(show->out);
  sel.diff_cut = show->truncated;
  sel.inspect_command = "git show " + sha;
  sel.description = fmt::format(
      "The change to review is what commit {} introduced, compared with its parent.", sha);
  return sel;
}

Result<ChangeSelection> SelectUncommitted(Git& git, ChangeSelection sel, size_t max_bytes) {
  Result<std::optional<std::string>> head = ResolveCommit(git, "HEAD");
  if (!head.ok()) return head.error();
  const std::string against = *head ? "HEAD" : kEmptyTree;  // no commit yet: all is new
  Result<GitRun> diff = Query(git, Args({"diff"}, kDiffOptions, {against}));
  if (!diff.ok()) return diff.error();
  sel.diff = std::move(diff->out);
  sel.diff_cut = diff->truncated;

  // From the root, so a review started in a subdirectory sees every untracked file and the
  // diff headers name paths as `git diff` does.
  const std::string& root = sel.repo_root;
  Result<GitRun> untracked =
      Query(git, {"-C", root, "ls-files", "--others", "--exclude-standard", "-z"});
  if (!untracked.ok()) return untracked.error();
  size_t pos = 0;
  const std::string& names = untracked->out;
  while (pos < names.size() && !sel.diff_cut) {
    if (sel.diff.size() > max_bytes) {
      // Over budget already: the rest would be cut anyway; do not run git once per file.
      sel.diff_cut = true;
      break;
    }
    size_t end = names.find('\0', pos);
    if (end == std::string::npos) end = names.size();
    std::string path = names.substr(pos, end - pos);
    pos = end + 1;
    if (path.empty()) continue;
    // Exit 1 means "the files differ", which a new file always does.
    Result<GitRun> added = Query(
        git, Args({"-C", root, "diff"}, kDiffOptions, {"--no-index", "--", "/dev/null", path}),
        {0, 1});
    if (!added.ok()) return added.error();
    sel.diff += added->out;
    sel.diff_cut = added->truncated;
  }
  sel.inspect_command = "git diff " + against + " && git status --porcelain";
  sel.description =
      "The change to review is the uncommitted work in this repository: staged and unstaged "
      "edits to tracked files and new untracked files (ignored files are left out).";
  if (sel.diff.empty()) {
    return MakeError(
        "nothing to review: there are no uncommitted changes (staged, unstaged or untracked); "
        "pass --base BRANCH to review a branch or --commit SHA to review a commit");
  }
  return sel;
}

// Cuts the diff to the budget at a line boundary and makes it valid UTF-8 for the request.
void FitDiff(ChangeSelection& sel, size_t max_bytes) {
  // Cut already (capture budget, untracked files left out): what we have is a lower bound.
  sel.diff_total_known = !sel.diff_cut;
  sel.diff_total_bytes = sel.diff.size();
  if (sel.diff.size() > max_bytes) {
    size_t cut = sel.diff.rfind('\n', max_bytes == 0 ? 0 : max_bytes - 1);
    sel.diff.resize(cut == std::string::npos ? 0 : cut + 1);
    sel.diff_cut = true;
  }
  if (!IsValidUtf8(sel.diff)) sel.diff = SanitizeUtf8(sel.diff);
}

}  // namespace

Result<ChangeSelection> SelectChange(Git& git, const ReviewTarget& target, size_t max_diff_bytes) {
  ChangeSelection sel;
  Result<GitRun> top = git.Run({"rev-parse", "--show-toplevel"});
  if (!top.ok()) return top.error();
  if (top->exit_code != 0 || Trimmed(top->out).empty()) {
    return MakeError(
        "agentexec review needs a git repository: run it inside one (or point -C at one)");
  }
  sel.repo_root = Trimmed(top->out);

  Result<ChangeSelection> out = MakeError("");
  switch (target.kind) {
    case ReviewTargetKind::kBase:
      out = SelectBase(git, target.ref, std::move(sel));
      break;
    case ReviewTargetKind::kCommit:
      out = SelectCommit(git, target.ref, std::move(sel));
      break;
    case ReviewTargetKind::kUncommitted:
      out = SelectUncommitted(git, std::move(sel), max_diff_bytes);
      break;
  }
  if (out.ok()) FitDiff(*out, max_diff_bytes);
  return out;
}

}  // namespace ae
