// Is the working directory inside a git repository? (the message is codex's)
#pragma once

#include <optional>
#include <string>

#include "base/result.h"

namespace ae {

inline constexpr const char* kNotInGitRepoMessage =
    "Not inside a trusted directory and --skip-git-repo-check was not specified.";

// The nearest directory at or above `cwd` (absolute) holding a `.git` directory or file
// (a worktree or submodule has a file), or nullopt.
std::optional<std::string> FindGitRoot(const std::string& cwd);

// OK inside a repository or when skipped; otherwise kNotInGitRepoMessage.
Status CheckGitRepo(const std::string& cwd, bool skip_git_repo_check);

}  // namespace ae
