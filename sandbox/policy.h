// What a sandboxed command may touch, derived from configuration. Pure data: building it
// does no system calls beyond resolving paths.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "sandbox/mode.h"

namespace ae::sandbox {

// The configuration's view (CONTRACT §7/§8), before paths are resolved.
struct Settings {
  Mode mode = Mode::kReadOnly;
  std::vector<std::string> writable_roots;  // sandbox_workspace_write.writable_roots
  std::vector<std::string> add_dirs;        // --add-dir
  bool network_access = false;
  bool exclude_tmpdir_env_var = false;
  bool exclude_slash_tmp = false;
  // require_full_isolation (top level): a sandbox without its mount or PID namespace is an
  // error (exit 3) instead of a warning.
  bool require_full_isolation = false;
  // Directories that stay read-only to commands wherever they lie inside a writable root,
  // whatever their name: agentexec's home and $CODEX_HOME (their config.toml name the MCP
  // servers and providers the next run starts, outside any sandbox). Absolute.
  std::vector<std::string> read_only_dirs;
};

// The bounds of the scan for nested repositories in each writable root; a root deeper or
// larger gets a warning that the rest is not protected.
constexpr int kNestedScanMaxDepth = 12;
constexpr size_t kNestedScanMaxDirs = 20000;

// Resolved policy: absolute, canonical paths.
struct Policy {
  Mode mode = Mode::kReadOnly;
  std::vector<std::string> writable_roots;
  // `<root>/.git` and `<root>/.agentexec` of each writable root, listed whether or not they
  // exist yet, plus a linked worktree's git dir and common dir; and, where they exist, those
  // of every parent directory of the cwd and of the roots, $GIT_DIR and $GIT_COMMON_DIR, and
  // every nested repository, submodule and worktree found inside a root (bounded scan); and
  // each of Settings::read_only_dirs that lies below a writable root.
  std::vector<std::string> read_only_carveouts;
  // (st_dev, st_ino) of each carve-out that existed when the policy was built: agentexec's own
  // writes (ConfinedFs) refuse to pass through them under whatever name a command has since
  // renamed a parent to, as the mount layer does for commands (HeldCarveout).
  std::vector<std::pair<dev_t, ino_t>> carveout_ids;
  bool network_access = false;
  bool require_full_isolation = false;  // Settings::require_full_isolation
  // Things the user should know but that do not stop the run (e.g. a --add-dir that does not
  // exist and was skipped). Callers show them as warnings.
  std::vector<std::string> warnings;

  bool unrestricted() const { return mode == Mode::kDangerFullAccess; }
  // True when a write to `path` (absolute) is allowed by this policy: ConfinedFs::Target.
  bool CanWrite(std::string_view path) const;
};

// cwd must be absolute. $TMPDIR is read from the environment unless excluded.
Result<Policy> BuildPolicy(const Settings& settings, const std::string& cwd);

}  // namespace ae::sandbox
