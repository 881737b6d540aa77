#include "batch/child.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/beneath.h"
#include "base/cancel.h"
#include "base/read_file.h"
#include "base/secret_env.h"
#include "base/write_all.h"
#include "engine/review/git.h"

// The C library's; read once, by ProcessEnv.
extern char** environ;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

namespace ae {

// The environment each task's agentexec (and each git) gets, copied once: this vector
// (Batch::env_) is where batch keeps the credentials while it runs. Once it is taken, batch
// lets go of every variable that may hold one (a name with KEY, SECRET or TOKEN, as commands'
// default excludes) through the call `agentexec exec` lets go of its key with
// (base/secret_env.h): the values are overwritten in batch's startup block and leave
// `environ`, and batch becomes non-dumpable, whatever the tasks' sandbox (it outlives tasks of
// every mode). A task's command under danger-full-access runs unconfined as the same user and
// walks its ancestors, batch among them: it can read neither batch's /proc/PID/environ nor its
// /proc/PID/mem (where env_ is); root still can (CAP_SYS_PTRACE). /proc/self stays open to
// batch itself (the /proc/self/fd link RunTask reads through), and children get dumpability
// back at execve. What else holds a value, and for how long: each child's copy of env_ in its
// spec until the child has started (RunChild wipes it); GitSpec's working copy, wiped at once;
// a "NAME=value" of 15 bytes or fewer that HardenedGitEnv's vector copied as it grew (left in
// freed memory: engine/review/git.cc does not reserve); a credential named otherwise (a
// provider's env_key such as LLM_CRED), left in the startup block, closed to the same user
// like the rest; and in a sanitizer build, the runtime's own copy of the startup block.
std::vector<std::string> ProcessEnv() {
  size_t n = 0;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) ++n;
  std::vector<std::string> env;
  env.reserve(n);  // no reallocation: a short "NAME=value" would leave its bytes behind
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  ForgetSecretVariables(CredentialLookingVariables(), /*non_dumpable=*/true);
  return env;
}

// The one place batch runs git. Every call runs unconfined on a repository a confined command
// may just have changed, so it goes through the review's hardened invocation
// (engine/review/git.h: no system config, hooks, fsmonitor, pager, external diff or textconv),
// plus what batch's own commands need: no ext:: transport, no signing, and no repository
// chosen by the environment (each task's clone is named by its cwd alone).
sandbox::SpawnSpec GitSpec(const std::string& cwd, const std::vector<std::string>& args,
                           const std::vector<std::string>& base_env) {
  sandbox::SpawnSpec spec;
  spec.argv = {"git"};
  // Without a filter listing nothing can be refused: batch runs no git on a clone whose
  // configuration the task changed.
  Result<std::vector<std::string>> hardened = HardenedGitArgs();
  if (hardened.ok()) spec.argv.insert(spec.argv.end(), hardened->begin(), hardened->end());
  for (const char* setting : {"protocol.ext.allow=never", "commit.gpgSign=false"}) {
    spec.argv.insert(spec.argv.end(), {"-c", setting});
  }
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.cwd = cwd;
  std::vector<const char*> env;
  env.reserve(base_env.size() + 1);
  for (const std::string& kv : base_env) env.push_back(kv.c_str());
  env.push_back(nullptr);
  // The credentials are among these copies: what is not moved into the spec is wiped here,
  // the spec's own by RunChild once git has started.
  std::vector<std::string> git_env = HardenedGitEnv(env.data());
  spec.env.reserve(git_env.size());
  for (std::string& kv : git_env) {
    if (kv.starts_with("GIT_DIR=") || kv.starts_with("GIT_WORK_TREE=") ||
        kv.starts_with("GIT_INDEX_FILE=") || kv.starts_with("GIT_COMMON_DIR=") ||
        kv.starts_with("GIT_OBJECT_DIRECTORY=") || kv.starts_with("GIT_ALTERNATE_OBJECT")) {
      continue;
    }
    spec.env.push_back(std::move(kv));
  }
  WipeStrings(git_env);
  spec.separate_stderr = true;
  return spec;
}

// How long a child has after SIGTERM before its whole tree is killed.
constexpr int64_t kTermGraceMs = 3000;

Result<ChildResult> RunChild(sandbox::SpawnSpec spec, std::string_view input,
                             const std::function<void(const char*, size_t)>& on_out,
                             const std::function<void(const char*, size_t)>& on_err,
                             const std::vector<int>& stop_fds, int64_t timeout_ms) {
  spec.stdin_pipe = true;
  spec.separate_stderr = true;
  sandbox::RunLimits limits;
  limits.timeout_ms = timeout_ms;
  limits.max_output_bytes = 0;  // the callbacks keep what batch keeps
  limits.drain_ms = kTermGraceMs;
  limits.on_output = on_out;
  limits.on_error = on_err;
  limits.input = input;
  limits.stop_fds = stop_fds;
  limits.term_grace_ms = kTermGraceMs;
  CancelToken never;  // batch's own tokens come in as stop_fds
  // The spec's environment is a copy of the credentials the child needs until it is
  // started: wiped as soon as the child is forked (it has its own copy by then, and Spawn
  // reads the environment no more), or after a spawn that never forked.
  Result<sandbox::RunResult> run =
      sandbox::RunProcess(spec, limits, never, [&spec](int) { WipeStrings(spec.env); });
  WipeStrings(spec.env);
  if (!run.ok()) return run.error();
  if (run->setup_error) return MakeError(*run->setup_error);
  ChildResult result;
  result.exit_code = run->exit_code;
  result.timed_out = run->timed_out;
  result.terminated_by_us = run->cancelled;
  return result;
}

// What git reads of the clone's own configuration, as batch left it after the checkout. A
// command that can write .git (danger-full-access, or a sandbox without a mount namespace)
// could otherwise name programs there (a clean filter, a diff driver) that batch's unconfined
// `git add` and `git diff` would run. Returns the state to compare with later.
Result<std::string> GitConfigState(const std::string& clone) {
  struct stat st {};
  if (::lstat((clone + "/.git").c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return MakeError(".git is no longer a directory");
  }
  for (const char* redirect : {"/.git/commondir", "/.git/config.worktree"}) {
    if (::lstat((clone + redirect).c_str(), &st) == 0) {
      return MakeError(fmt::format("{} appeared", redirect + 1));
    }
  }
  if (::lstat((clone + "/.git/config").c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return MakeError(".git/config is not a regular file");
  }
  Result<std::string> config = ReadRegularFile(clone + "/.git/config", size_t{1} << 20);
  if (!config.ok()) return MakeError(".git/config: " + config.message());
  return *config;
}

// A git call whose output is returned (bounded) and whose failure is an Error.
// `stop_fds` and `timeout_ms` as for RunChild.
Result<std::string> BatchGit(const std::string& cwd, const std::vector<std::string>& args,
                             const std::vector<std::string>& env, const std::vector<int>& stop_fds,
                             int64_t timeout_ms) {
  std::string out, err;
  auto keep = [](std::string& s) {
    return [&s](const char* d, size_t n) {
      if (s.size() < (size_t{1} << 20)) s.append(d, std::min(n, (size_t{1} << 20) - s.size()));
    };
  };
  Result<ChildResult> r =
      RunChild(GitSpec(cwd, args, env), "", keep(out), keep(err), stop_fds, timeout_ms);
  if (!r.ok()) return MakeError(fmt::format("git {}: {}", args.front(), r.message()));
  if (r->exit_code != 0) {
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    return MakeError(fmt::format("git {} failed (exit {}): {}", args.front(), r->exit_code, err));
  }
  return out;
}

Result<Fd> CreateBeneath(int dirfd, const char* name) {
  Fd fd;
  if (int err =
          OpenBeneath(dirfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644, kBeneathNoSymlinks, &fd);
      err != 0) {
    return MakeError(fmt::format("cannot create {}: {}", name, std::strerror(err)));
  }
  return fd;
}

Status WriteBeneath(int dirfd, const char* name, std::string_view data) {
  Result<Fd> fd = CreateBeneath(dirfd, name);
  if (!fd.ok()) return fd.error();
  Status w = WriteAll(fd->get(), data);
  if (!w.ok()) return MakeError(fmt::format("cannot write {}: {}", name, w.message()));
  return {};
}

Result<Fd> MakeDirBeneath(int dirfd, const std::string& name, bool may_exist) {
  Fd fd;
  const unsigned how = kBeneathNoSymlinks | (may_exist ? 0u : kBeneathFresh);
  if (int err = MakeDirsBeneath(dirfd, name, how, &fd); err != 0) {
    return MakeError(fmt::format("cannot create the directory {}: {}", name, std::strerror(err)));
  }
  return fd;
}

Status MoveAside(int dirfd, const std::string& name) {
  std::string aside;
  if (int err = MoveAsideAt(dirfd, name, ".interrupted", &aside); err != 0) {
    return MakeError(fmt::format("cannot move {} aside: {}", name, std::strerror(err)));
  }
  return {};
}

}  // namespace ae
