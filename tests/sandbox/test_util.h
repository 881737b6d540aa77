// Helpers for the sandbox tests: a scratch directory, running a real process with its
// output captured, and small file utilities.
#pragma once

#include <netinet/in.h>

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "sandbox/policy.h"
#include "sandbox/preflight.h"
#include "tests/support/reachable.h"
#include "tests/support/scratch_dir.h"

namespace ae::sandbox::testing {

struct Ran {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string output;  // stdout and stderr, interleaved
};

// Runs argv (argv[0] absolute or found in PATH) in `cwd` with `set_env` added to our
// environment and `unset_env` removed.
Ran RunProcess(const std::vector<std::string>& argv, const std::string& cwd,
               const std::vector<std::pair<std::string, std::string>>& set_env = {},
               const std::vector<std::string>& unset_env = {});

// A directory under /tmp removed (with everything in it) when the object goes away.
using ScratchDir = ae::test::ScratchDir;

void WriteText(const std::string& path, const std::string& text);
std::string ReadText(const std::string& path);
bool Exists(const std::string& path);

// Pids of running `sleep MARKER` processes (sandbox_probe daemon's).
std::vector<int> ProcessesWith(const std::string& marker);

// Waits (bounded) until no process carries `marker`; if some still run after `ms`, kills
// them and returns false.
bool GoneWithin(const std::string& marker, int ms);

#if defined(AGENTEXEC_BIN) && defined(SANDBOX_PROBE)
// agentexec and the probe as every user may run them: the tests that switch to nobody use
// these (tests/support/reachable.h).
inline const char* Bin() {
  static const std::string path = ae::test::ReachableExecutable(AGENTEXEC_BIN);
  return path.c_str();
}
inline const char* Probe() {
  static const std::string path = ae::test::ReachableExecutable(SANDBOX_PROBE);
  return path.c_str();
}
#endif

// Runs a shell command outside any sandbox and fails the test if it fails.
void Sh(const std::string& command, const std::string& cwd);

// `path` with every symlink resolved (itself when it cannot be): the scratch directory under
// a linked /tmp is then named as the policy names it.
std::string RealPath(const std::string& path);

// `strings` as the null-terminated array execve and posix_spawn take; it points into `strings`,
// which must outlive it.
std::vector<char*> ExecArray(const std::vector<std::string>& strings);

// Sets (or unsets, with nullptr) an environment variable until the object goes away, then puts
// back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// Workspace-write over `ws` with its .git and .agentexec read-only, made by hand: no search,
// so the test alone says which carve-outs there are.
Policy CarvedOutPolicy(const std::string& ws);

// Workspace-write with /tmp and $TMPDIR left out, so that only the scratch directory's own
// layout decides what is writable.
Settings WorkspaceWriteSettings();

// The preflight on a host faked to lack something: `fake` names an AGENTEXEC_SANDBOX_FAKE_*
// variable, set for this call only.
Result<PreflightReport> PreflightFaking(const char* fake, const Policy& policy);

// A socket of `type` (SOCK_STREAM and its flags) listening on 127.0.0.1 at a port the kernel
// picks: *fd, and *addr with that port. Fails the test when it cannot bind or listen (callers
// wrap it in ASSERT_NO_FATAL_FAILURE).
void ListenOnLoopback(int type, int backlog, int* fd, sockaddr_in* addr);

// The set-up the sandbox tests share: a scratch directory `base_` holding a git workspace `ws`
// and a sibling `outside`, and `policy_`, workspace-write for `ws` with /tmp and $TMPDIR left
// out (so only the scratch directory's own layout decides). Skips without Landlock.
class WorkspaceWriteTest : public ::testing::Test {
 protected:
  void SetUp() override;

  ScratchDir dir_;
  std::string base_;  // dir_.path()
  Policy policy_;
};

}  // namespace ae::sandbox::testing
