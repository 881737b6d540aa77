// Which change a review looks at, computed by agentexec (not left to the model): the merge
// base for --base, `git diff HEAD` plus untracked files for --uncommitted, `git show` for
// --commit. Errors are usage errors (exit 2) that say what to do.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"
#include "engine/review/git.h"

namespace ae {

enum class ReviewTargetKind { kUncommitted, kBase, kCommit };

struct ReviewTarget {
  ReviewTargetKind kind = ReviewTargetKind::kUncommitted;
  std::string ref;  // the base branch or the commit, as the user gave it
};

struct ChangeSelection {
  std::string repo_root;         // absolute top level of the working tree
  std::string description;       // one sentence: what the change is and how to inspect it
  std::string diff;              // unified diff, valid UTF-8, cut at a line to the budget
  size_t diff_total_bytes = 0;   // before cutting
  bool diff_total_known = true;  // false: the change is larger than diff_total_bytes
  bool diff_cut = false;
  std::string inspect_command;  // `git ...` that shows the whole change again
};

// The diff is cut to `max_diff_bytes` at a line boundary (the prompt then tells the model how
// to read the rest). An empty change is an error: there is nothing to review.
Result<ChangeSelection> SelectChange(Git& git, const ReviewTarget& target, size_t max_diff_bytes);

}  // namespace ae
