#include "engine/review/git.h"

#include <fmt/format.h>
#include <unistd.h>

#include <optional>
#include <set>
#include <string_view>

#include "base/cancel.h"
#include "sandbox/spawn.h"

extern char** environ;

namespace ae {
namespace {

class SystemGit : public Git {
 public:
  explicit SystemGit(std::string cwd) : cwd_(std::move(cwd)) {}

  Result<GitRun> Run(const std::vector<std::string>& args) override {
    if (!prefix_) {
      // The filter drivers the configuration defines, read once (review runs git before the
      // turn); reading configuration runs nothing.
      Result<sandbox::RunResult> listed = Spawn(
          *HardenedGitArgs(), {"config", "-z", "--name-only", "--get-regexp", kFilterKeysRegexp},
          "exec git \"$@\" 2>/dev/null");
      if (!listed.ok()) return listed.error();
      if (listed->setup_error) return MakeError("cannot run git: " + *listed->setup_error);
      Result<std::vector<std::string>> prefix =
          HardenedGitArgs(listed->exit_code == 0 ? listed->output : std::string());
      if (!prefix.ok()) return prefix.error();
      prefix_ = std::move(*prefix);
    }
    // RunProcess captures stdout and stderr together; a diff must not carry git's warnings,
    // so stderr goes to /dev/null and is only collected (by a second run) when git failed.
    Result<sandbox::RunResult> quiet = Spawn(*prefix_, args, "exec git \"$@\" 2>/dev/null");
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
      Result<sandbox::RunResult> loud = Spawn(*prefix_, args, "exec git \"$@\" 2>&1 >/dev/null");
      if (loud.ok()) run.error_text = std::move(loud->output);
    }
    return run;
  }

 private:
  Result<sandbox::RunResult> Spawn(const std::vector<std::string>& prefix,
                                   const std::vector<std::string>& args, const char* script) {
    sandbox::SpawnSpec spec;
    spec.argv = {"/bin/sh", "-c", script, "git"};
    spec.argv.insert(spec.argv.end(), prefix.begin(), prefix.end());
    spec.argv.insert(spec.argv.end(), {"-c", "core.quotepath=off"});
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.cwd = cwd_;
    for (std::string& var : HardenedGitEnv(environ)) {
      if (!var.starts_with("LC_ALL=")) spec.env.push_back(std::move(var));
    }
    spec.env.emplace_back("LC_ALL=C");
    sandbox::RunLimits limits;
    limits.timeout_ms = 120000;
    limits.max_output_bytes = 16u << 20;
    return sandbox::RunProcess(spec, limits, cancel_);
  }

  std::string cwd_;
  std::optional<std::vector<std::string>> prefix_;  // HardenedGitArgs for this repository
  CancelToken cancel_;  // git runs before the turn, under its own timeout
};

// GIT_* variables that only say where the repository is; every other one (GIT_EXTERNAL_DIFF,
// GIT_PAGER, GIT_SSH_COMMAND, GIT_EXEC_PATH, GIT_CONFIG_*, GIT_ASKPASS...) may name a program
// or configuration and is dropped.
bool KeptGitVariable(std::string_view name) {
  for (std::string_view kept : {"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
                                "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                                "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"}) {
    if (name == kept) return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<Git> MakeSystemGit(const std::string& cwd) {
  return std::make_unique<SystemGit>(cwd);
}

Result<std::vector<std::string>> HardenedGitArgs(std::string_view filter_config) {
  std::vector<std::string> args = {"--no-pager"};
  for (const char* setting : {"core.fsmonitor=false", "core.hooksPath=/dev/null", "core.pager=cat",
                              // Empty: a diff without --no-ext-diff fails, and runs nothing.
                              "diff.external=", "log.showSignature=false",
                              // A nested repository's own state is not asked for: that would
                              // run git in it, under filter drivers not listed here.
                              "diff.ignoreSubmodules=dirty", "core.attributesFile=/dev/null"}) {
    args.insert(args.end(), {"-c", setting});
  }
  std::set<std::string> drivers;
  size_t at = 0;
  while (at < filter_config.size()) {
    size_t end = filter_config.find('\0', at);
    if (end == std::string_view::npos) end = filter_config.size();
    std::string_view key = filter_config.substr(at, end - at);
    at = end + 1;
    // filter.<driver>.<clean|smudge|process>; the driver may hold dots.
    const size_t last_dot = key.rfind('.');
    if (!key.starts_with("filter.") || last_dot == std::string_view::npos || last_dot < 7) {
      continue;
    }
    std::string_view driver = key.substr(7, last_dot - 7);
    // `-c NAME=VALUE` splits at the first '=': such a driver cannot be overridden.
    if (driver.find('=') != std::string_view::npos) {
      return MakeError(fmt::format(
          "cannot run git safely here: the filter driver '{}' in the repository's configuration "
          "cannot be switched off (its name holds '=')",
          driver));
    }
    drivers.emplace(driver);
  }
  for (const std::string& d : drivers) {
    for (const char* var : {"clean", "smudge", "process"}) {
      args.insert(args.end(), {"-c", "filter." + d + "." + var + "="});
    }
    args.insert(args.end(), {"-c", "filter." + d + ".required=false"});
  }
  return args;
}

std::vector<std::string> HardenedGitEnv(const char* const* env) {
  std::vector<std::string> out;
  for (const char* const* e = env; e != nullptr && *e != nullptr; ++e) {
    std::string_view var = *e;
    const std::string_view name = var.substr(0, var.find('='));
    if (name.starts_with("GIT_") && !KeptGitVariable(name)) continue;
    out.emplace_back(var);
  }
  for (const char* set : {"GIT_CONFIG_NOSYSTEM=1", "GIT_ATTR_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
                          "GIT_NO_LAZY_FETCH=1", "GIT_OPTIONAL_LOCKS=0"}) {
    out.emplace_back(set);
  }
  return out;
}

}  // namespace ae
