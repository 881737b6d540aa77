// Git: the one door `agentexec review` uses to ask git about the repository (merge bases,
// diffs, commits). Behind an interface so the diff selection is tested without processes; the
// real one runs the git binary.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace ae {

struct GitRun {
  int exit_code = 0;
  std::string out;         // stdout only, as bytes (not necessarily UTF-8)
  std::string error_text;  // when exit_code >= 2: what git said on stderr, for messages
  bool truncated = false;  // `out` was longer than the capture budget and was cut
};

class Git {
 public:
  virtual ~Git() = default;
  // Runs `git ARGS` in the repository. An Error only when git could not be run at all; a
  // failing git command is a GitRun with its exit code (1 is often an answer: "no such ref",
  // "no merge base", "files differ").
  virtual Result<GitRun> Run(const std::vector<std::string>& args) = 0;
};

// The git binary from PATH, run in `cwd`, unconfined, through HardenedGitArgs and
// HardenedGitEnv; a C locale so what it prints does not depend on the user's language.
std::unique_ptr<Git> MakeSystemGit(const std::string& cwd);

// Every git agentexec runs itself runs unconfined, in a repository whose configuration and
// attributes a command, a pull request or a nested repository may have written. Git runs
// programs named there: core.fsmonitor (status, diff, add), filter.<driver>.clean/smudge/
// process (any read of a work-tree or blob file whose attributes name the driver),
// diff.external and diff.<driver>.command, diff.<driver>.textconv, core.pager, gpg.program
// (log.showSignature), hooks. These are the one way to neutralise them (scripts/ci/run.sh's
// safe_git does the same in shell); diff-like commands add --no-ext-diff --no-textconv.
//
// The arguments after "git": no pager, and each of those settings overridden on the command
// line (which wins over every file, and reaches the git processes git starts for submodules).
// `filter_config` is the output of `git config -z --name-only --get-regexp
// kFilterKeysRegexp`: a filter driver has a name of the repository's choosing, so each one
// defined is listed and emptied.
inline constexpr const char* kFilterKeysRegexp = "^filter\\..*\\.(clean|smudge|process)$";
// An error for a driver whose name -c cannot express (it holds '='): fail closed.
Result<std::vector<std::string>> HardenedGitArgs(std::string_view filter_config = {});
// The environment: `env` without GIT_* variables other than those naming the repository
// (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE...), and with no system config or attributes, no
// credential prompt, no lazy fetch, no optional locks (no index refresh written).
std::vector<std::string> HardenedGitEnv(const char* const* env);

}  // namespace ae
