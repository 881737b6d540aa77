#include "engine/review/git.h"

#include <unistd.h>

#include "base/cancel.h"
#include "sandbox/spawn.h"

extern char** environ;

namespace ae {
namespace {

class SystemGit : public Git {
 public:
  explicit SystemGit(std::string cwd) : cwd_(std::move(cwd)) {}

  Result<GitRun> Run(const std::vector<std::string>& args) override {
    // RunProcess captures stdout and stderr together; a diff must not carry git's warnings,
    // so stderr goes to /dev/null and is only collected (by a second run) when git failed.
    Result<sandbox::RunResult> quiet = Spawn(args, "exec git \"$@\" 2>/dev/null");
    if (!quiet.ok()) return quiet.error();
    if (quiet->setup_error) {
      return MakeError("cannot run git: " + *quiet->setup_error);
    }
    GitRun run;
    run.exit_code = quiet->exit_code;
    run.out = std::move(quiet->output);
    run.truncated = quiet->truncated;
    if (run.exit_code == 127) {
      return MakeError("cannot run git: it is not installed or not on PATH");
    }
    if (run.exit_code >= 2) {
      Result<sandbox::RunResult> loud = Spawn(args, "exec git \"$@\" 2>&1 >/dev/null");
      if (loud.ok()) run.error_text = std::move(loud->output);
    }
    return run;
  }

 private:
  Result<sandbox::RunResult> Spawn(const std::vector<std::string>& args, const char* script) {
    sandbox::SpawnSpec spec;
    spec.argv = {"/bin/sh", "-c", script, "git", "--no-pager", "-c", "core.quotepath=off"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.cwd = cwd_;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view var = *e;
      if (var.starts_with("GIT_OPTIONAL_LOCKS=") || var.starts_with("LC_ALL=") ||
          var.starts_with("GIT_EXTERNAL_DIFF=")) {
        continue;
      }
      spec.env.emplace_back(var);
    }
    spec.env.emplace_back("GIT_OPTIONAL_LOCKS=0");
    spec.env.emplace_back("LC_ALL=C");
    sandbox::RunLimits limits;
    limits.timeout_ms = 120000;
    limits.max_output_bytes = 16u << 20;
    return sandbox::RunProcess(spec, limits, cancel_);
  }

  std::string cwd_;
  CancelToken cancel_;  // git runs before the turn, under its own timeout
};

}  // namespace

std::unique_ptr<Git> MakeSystemGit(const std::string& cwd) {
  return std::make_unique<SystemGit>(cwd);
}

}  // namespace ae
