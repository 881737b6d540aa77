// How batch runs its children (each task's agentexec, its check, every git) and writes its
// files: the one mechanism `batch run` and `batch publish` share.
//
// Git always runs unconfined on a repository a confined command may have changed, so every
// git call goes through GitSpec (engine/review/git.h's hardening). Files batch writes once a
// task has run are created beneath directory descriptors batch opened itself, never through a
// link a command could have planted.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "sandbox/spawn.h"

namespace ae {

// Git steps are local and small; one that hangs is killed. (A push has a network in between:
// batch_publish gives it its own.)
inline constexpr int64_t kGitTimeoutMs = 120000;

// This process's environment, copied once for the children (batch run's tasks and every git,
// batch publish's pushes); then the variables that may hold a credential leave `environ` and
// the process becomes non-dumpable (batch_child.cc says why and what is left).
std::vector<std::string> ProcessEnv();

struct ChildResult {
  int exit_code = -1;
  bool terminated_by_us = false;  // got SIGTERM from batch (signal or time limit)
  bool timed_out = false;         // killed at `timeout_ms`
};

// Runs `spec` to its end through the one process runner (sandbox::RunProcess): `input` on
// stdin, stdout and stderr to the callbacks as they arrive. When any of `stop_fds` becomes
// readable the child gets SIGTERM, and a grace period later SIGKILL for the whole tree;
// `timeout_ms` > 0 kills it outright. `spec` is taken by value (callers move it in): its
// environment, a copy of the credentials the child needs until it is started, is wiped as
// soon as the child is forked.
Result<ChildResult> RunChild(sandbox::SpawnSpec spec, std::string_view input,
                             const std::function<void(const char*, size_t)>& on_out,
                             const std::function<void(const char*, size_t)>& on_err,
                             const std::vector<int>& stop_fds, int64_t timeout_ms);

// `git ARGS` in `cwd` with `base_env`, hardened (see batch_child.cc).
sandbox::SpawnSpec GitSpec(const std::string& cwd, const std::vector<std::string>& args,
                           const std::vector<std::string>& base_env);

// A git call whose output is returned (bounded) and whose failure is an Error
// "git ARG failed (exit N): STDERR". `stop_fds` and `timeout_ms` as for RunChild.
Result<std::string> BatchGit(const std::string& cwd, const std::vector<std::string>& args,
                             const std::vector<std::string>& env,
                             const std::vector<int>& stop_fds = {},
                             int64_t timeout_ms = kGitTimeoutMs);

// What git reads of the clone's own configuration, as batch left it after the checkout. A
// command that can write .git (danger-full-access, or a sandbox without a mount namespace)
// could otherwise name programs there (a clean filter, a diff driver, a credential helper)
// that batch's unconfined git would run. Returns the state to compare with later.
Result<std::string> GitConfigState(const std::string& clone);

// batch's files and directories, made through base/beneath.h and worded for its messages.
// Creates `name` beneath `dirfd` for writing: never an existing file, never through a link.
Result<Fd> CreateBeneath(int dirfd, const char* name);
Status WriteBeneath(int dirfd, const char* name, std::string_view data);
// A directory `name` beneath `dirfd`, made by us now (or, `may_exist`, already there), opened
// without following a link.
Result<Fd> MakeDirBeneath(int dirfd, const std::string& name, bool may_exist);
// An interrupted task's directory `name`, when there is one, renamed to
// ".interrupted-NAME-K" (base/beneath.h's MoveAsideAt) so the task starts afresh.
Status MoveAside(int dirfd, const std::string& name);

}  // namespace ae
