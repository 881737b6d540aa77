// `agentexec sandbox`: confine this very process (still single-threaded here) with the
// prepared sandbox and execvp the command. With a PID namespace this process stays behind as
// the supervisor (sandbox/containment.h) and exits as the command does; without one, the
// command replaces it (unless it leads a process group, when setsid needs a fork).
#include "runner/sandbox_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/child.h"
#include "base/result.h"
#include "base/sanitizer.h"
#include "runner/exit_code.h"
#include "runner/session_config.h"
#include "sandbox/policy.h"
#include "sandbox/preflight.h"
#include "sandbox/prepared.h"

namespace ae {
namespace {

void PrintLine(const std::string& line) {
  std::fputs(line.c_str(), stderr);
  std::fputc('\n', stderr);
}

}  // namespace

int RunSandboxCommand(const CliArgs& args) {
  const Environment env = Environment::FromProcess();
  Result<LoadedLayers> layers = LoadLayers(args, env);
  if (!layers.ok()) return FailWith(ExitCode::kUsage, layers.message());
  for (const std::string& w : layers->config.warnings) PrintLine("warning: " + w);
  const sandbox::Settings settings =
      SandboxSettingsFrom(layers->config, layers->cwd, env.cwd, args.add_dirs);
  std::vector<std::string> command = *args.sandbox_command;
  const int unavailable = ToInt(ExitCode::kSandboxUnavailable);

  Result<sandbox::Policy> policy = sandbox::BuildPolicy(settings, layers->cwd);
  if (!policy.ok()) {
    PrintLine(policy.message());
    return unavailable;
  }

  if (!policy->unrestricted()) {
    Result<sandbox::PreflightReport> report = sandbox::Preflight(*policy);
    if (!report.ok()) {
      PrintLine(report.message());
      return unavailable;
    }
    for (const std::string& warning : report->warnings) PrintLine(warning);
    sandbox::PrepareOptions options;
    options.mount_namespace = report->mount_namespace;
    options.pid_namespace = report->pid_namespace;
    Result<sandbox::PreparedPtr> prepared = sandbox::Prepare(*policy, options);
    if (!prepared.ok()) {
      PrintLine(prepared.message());
      return unavailable;
    }
    if (!policy->network_access) ::setenv("CODEX_SANDBOX_NETWORK_DISABLED", "1", 1);
    // The command gets 0, 1 and 2 as given and nothing else: an inherited descriptor keeps
    // the powers it was opened with (a file outside the roots, a socket, a directory to
    // fchmod), which no confinement applied afterwards takes away.
    CloseOnExecFrom3();
    const char* step = "";
    int err = 0;
    std::fflush(nullptr);
    CheckLeaksNow();
    if (!sandbox::ApplyInChild(**prepared, &step, &err)) {
      PrintLine(fmt::format("agentexec sandbox: {}: {}", step, std::strerror(err)));
      return unavailable;
    }
  }

  std::vector<char*> argv;
  for (std::string& arg : command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(argv[0], argv.data());
  const int err = errno;
  PrintLine(fmt::format("agentexec sandbox: {}: {}", command.front(), std::strerror(err)));
  return ToInt(err == ENOENT ? ExitCode::kCommandNotFound : ExitCode::kCannotExecute);
}

}  // namespace ae
