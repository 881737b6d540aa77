// FakeGit: answers `git ARGS` from a table and records every call, so the diff selection is
// tested without a repository.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/review/git.h"

namespace ae {

class FakeGit : public Git {
 public:
  // `git ARGS` (joined by spaces) answers `run`. Unknown commands fail the test loudly by
  // answering exit 99 with the command as error text.
  void On(const std::string& args, GitRun run) { answers_[args] = std::move(run); }
  void On(const std::string& args, int exit_code, std::string out = "") {
    GitRun run;
    run.exit_code = exit_code;
    run.out = std::move(out);
    answers_[args] = std::move(run);
  }

  Result<GitRun> Run(const std::vector<std::string>& args) override {
    std::string joined;
    for (const std::string& a : args) joined += (joined.empty() ? "" : " ") + a;
    calls_.push_back(joined);
    auto it = answers_.find(joined);
    if (it != answers_.end()) return it->second;
    GitRun unknown;
    unknown.exit_code = 99;
    unknown.error_text = "FakeGit: no answer for: git " + joined;
    return unknown;
  }

  const std::vector<std::string>& calls() const { return calls_; }

 private:
  std::map<std::string, GitRun> answers_;
  std::vector<std::string> calls_;
};

}  // namespace ae
