// A task's check (manifest `check`, `batch run --check CMD`): a shell command run after the
// agent's turn, in the task's directory and under the same sandbox the task ran with (as
// `agentexec sandbox`, with the task's sandbox options), with its own timeout. The task
// succeeds only if it exits 0. This is what turns a fleet run into an evaluation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "batch/report.h"

namespace ae {

// The tail of its output kept in the record (all of it goes to tasks/<id>/check.log).
inline constexpr size_t kCheckOutputTailBytes = 2048;

// `self sandbox [the sandbox options of exec_args] [-s task_sandbox] -- /bin/sh -c COMMAND`.
// Of the options batch passes to every task, those `agentexec sandbox` takes (-s, -c, -p,
// --add-dir, --allow-host, ...) are kept; --full-auto and --dangerously-bypass-... (and
// --yolo) become the -s they stand for.
std::vector<std::string> CheckArgv(const std::string& self,
                                   const std::vector<std::string>& exec_args,
                                   const std::optional<std::string>& task_sandbox,
                                   const std::string& command);

struct CheckRun {
  BatchRecord::Check check;
  bool interrupted = false;  // stopped by one of the stop descriptors (a signal, a limit)
};

// Runs the check in `cwd` with `env`; its stdout and stderr go to `log_fd` as they come and
// their tail into the result. A check that cannot start is exit -1 with the reason as output.
CheckRun RunCheck(std::vector<std::string> argv, const std::string& cwd,
                  const std::vector<std::string>& env, int log_fd, const std::vector<int>& stop_fds,
                  int64_t timeout_ms);

}  // namespace ae
