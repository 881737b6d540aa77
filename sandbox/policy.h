// What a sandboxed command may touch, derived from configuration. Pure data: building it
// does no system calls beyond resolving paths.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace ae::sandbox {

enum class Mode { kReadOnly, kWorkspaceWrite, kDangerFullAccess };

const char* ModeName(Mode mode);
Result<Mode> ParseMode(std::string_view text);

// The configuration's view (CONTRACT §7/§8), before paths are resolved.
struct Settings {
  Mode mode = Mode::kReadOnly;
  std::vector<std::string> writable_roots;  // sandbox_workspace_write.writable_roots
  std::vector<std::string> add_dirs;        // --add-dir
  bool network_access = false;
  bool exclude_tmpdir_env_var = false;
  bool exclude_slash_tmp = false;
};

// Resolved policy: absolute, canonical paths.
struct Policy {
  Mode mode = Mode::kReadOnly;
  std::vector<std::string> writable_roots;
  // `<root>/.git` and `<root>/.agentexec` of each writable root, listed whether or not they
  // exist yet, plus a linked worktree's git dir and common dir.
  std::vector<std::string> read_only_carveouts;
  bool network_access = false;
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
