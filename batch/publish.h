// Delivery: what `batch run` leaves beside each branch it made, and `agentexec batch publish
// DIR` (or `batch run --push`), which pushes those branches to their repositories' remotes.
//
// For each task that succeeded with changes, `batch run` writes into DIR/tasks/<id>/:
//   branch.json    {"branch":"agentexec/<id>","remote":REPO,"commit":SHA,"base":REF|null}
//   git-config     the clone's .git/config as batch left it (publish pushes only from a clone
//                  whose configuration is still that: a changed one could name programs)
//   pr-title.txt   one line: "agentexec: <id>: <the prompt's first line>"
//   pr-body.md     the task, the final message, the check and the diffstat, the model's and
//                  the repository's text rendered inert (EscapeMarkdownText, fenced blocks)
// ready for `gh pr create --title "$(cat pr-title.txt)" --body-file pr-body.md` and
// `glab mr create --title ... --description "$(cat pr-body.md)"`.
//
// Publishing runs in agentexec's own process after every task has ended, never in a task's
// sandbox: git push, hardened as every batch git (batch/child.h), from the task's clone
// to `remote`, with git's normal credential configuration (the user's ~/.gitconfig credential
// helper, or the URL's own); no task sees it. It is idempotent: a branch already at the commit
// is "up to date", one whose remote head is an ancestor of the commit is fast-forwarded, and
// one that diverged is reported and left alone unless --force (then replaced with
// --force-with-lease on the head just seen). Each outcome is a line of DIR/publish.jsonl.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace ae {

struct BranchRecord {
  std::string branch;  // agentexec/<id>
  std::string remote;  // the manifest's repo, resolved: an absolute path or a URL
  std::string commit;
  std::optional<std::string> base;  // the manifest's ref
};
std::string BranchRecordJson(const BranchRecord& record);

// What the pull request says; built by `batch run` from what the task had.
struct PullRequestInput {
  std::string id;
  std::string prompt;
  std::string final_message;
  std::optional<std::string> check_command;
  std::string check_result;  // "passed in 1s200ms" (empty: no check)
  std::string diffstat;      // `git diff --stat` of the change
};
std::string PullRequestTitle(const PullRequestInput& in);
std::string PullRequestBody(const PullRequestInput& in);

// One line of DIR/publish.jsonl. outcome: "pushed", "forced", "up to date", "diverged",
// "failed" (error says why).
struct PublishRecord {
  std::string id, branch, remote, commit, outcome;
  std::optional<std::string> error;
};
// The records of DIR/publish.jsonl in file order (none when it does not exist).
Status ForEachPublished(const std::string& dir, const std::function<void(PublishRecord)>& each);

struct BatchPublishOptions {
  std::string out;
  std::optional<std::string> work_dir;  // default OUT/work
  bool force = false;
};

// Pushes every succeeded task's branch of OUT; `env` is what git gets (the credentials'
// copy; wiped by the caller). Prints one line per task on stderr. Returns the exit code: 0
// every branch is on its remote, 1 one diverged or failed, 2 OUT is not a batch.
int PublishBatch(const BatchPublishOptions& options, const std::vector<std::string>& env);

}  // namespace ae
