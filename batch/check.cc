#include "batch/check.h"

#include <fmt/format.h>

#include <chrono>

#include "base/write_all.h"
#include "batch/child.h"
#include "cli/cli.h"

namespace ae {

std::vector<std::string> CheckArgv(const std::string& self,
                                   const std::vector<std::string>& exec_args,
                                   const std::optional<std::string>& task_sandbox,
                                   const std::string& command) {
  // The flags that stand for a sandbox mode; `agentexec sandbox` takes only -s.
  struct ModeFlag {
    const char* flag;
    const char* mode;
  };
  constexpr ModeFlag kModeFlags[] = {
      {"--full-auto", "workspace-write"},
      {"--dangerously-bypass-approvals-and-sandbox", "danger-full-access"},
      {"--yolo", "danger-full-access"},
  };
  std::vector<std::string> argv = {self, "sandbox"};
  for (size_t i = 0; i < exec_args.size(); ++i) {
    const std::string& arg = exec_args[i];
    const bool has_value = BatchPassOn(arg) == PassOn::kValue && i + 1 < exec_args.size();
    if (SandboxTakes(arg)) {
      argv.push_back(arg);
      if (has_value) argv.push_back(exec_args[i + 1]);
    }
    for (const ModeFlag& m : kModeFlags) {
      if (arg == m.flag) argv.insert(argv.end(), {"-s", m.mode});
    }
    if (has_value) ++i;
  }
  if (task_sandbox) argv.insert(argv.end(), {"-s", *task_sandbox});
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", command});
  return argv;
}

CheckRun RunCheck(std::vector<std::string> argv, const std::string& cwd,
                  const std::vector<std::string>& env, int log_fd, const std::vector<int>& stop_fds,
                  int64_t timeout_ms) {
  const auto start = std::chrono::steady_clock::now();
  CheckRun run;
  std::string tail;
  auto keep = [&](const char* d, size_t n) {
    (void)WriteAll(log_fd, std::string_view(d, n));
    tail.append(d, n);
    if (tail.size() > 2 * kCheckOutputTailBytes) tail.erase(0, tail.size() - kCheckOutputTailBytes);
  };
  sandbox::SpawnSpec spec;
  spec.argv = std::move(argv);
  spec.cwd = cwd;
  spec.env = env;
  Result<ChildResult> child = RunChild(std::move(spec), "", keep, keep, stop_fds, timeout_ms);
  run.check.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  if (!child.ok()) {
    run.check.output = "the check could not be started: " + child.message();
    return run;
  }
  run.check.exit_code = child->timed_out ? -1 : child->exit_code;
  run.check.timed_out = child->timed_out;
  run.interrupted = child->terminated_by_us;
  run.check.output = TextTail(tail, kCheckOutputTailBytes);
  return run;
}

}  // namespace ae
