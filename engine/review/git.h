// Git: the one door `agentexec review` uses to ask git about the repository (merge bases,
// diffs, commits). Behind an interface so the diff selection is tested without processes; the
// real one runs the git binary.
#pragma once

#include <memory>
#include <string>
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

// The git binary from PATH, run in `cwd`, unconfined (it only reads) but with external diff
// drivers and text conversion off, optional locks off (no index refresh written), and a
// C locale so what it prints does not depend on the user's language.
std::unique_ptr<Git> MakeSystemGit(const std::string& cwd);

}  // namespace ae
