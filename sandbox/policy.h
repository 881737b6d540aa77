// What a sandboxed command may touch, derived from configuration: the paths resolved, and
// the nested repositories inside the writable roots found by a walk (nested_walk.h) that a
// session runs off its start-up path (NestedScan).
#pragma once

#include <sys/types.h>

#include <cstdint>

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/cancel.h"
#include "base/result.h"
#include "sandbox/mode.h"

namespace ae::sandbox {

// The configuration's view, before paths are resolved.
struct Settings {
  Mode mode = Mode::kReadOnly;
  std::vector<std::string> writable_roots;  // sandbox_workspace_write.writable_roots
  std::vector<std::string> add_dirs;        // --add-dir
  bool network_access = false;
  // Proxied network (a `[network]` allow-list, workspace-write): each command in its own
  // network namespace with only `lo`, where this port of 127.0.0.1 reaches agentexec's proxy
  // (sandbox/network.h). 0: off, or everything with network_access.
  uint16_t proxy_port = 0;
  bool exclude_tmpdir_env_var = false;
  bool exclude_slash_tmp = false;
  // sandbox_workspace_write.shared_tmp: commands get the host's /tmp and $TMPDIR (as codex's
  // do) instead of the run's own (sandbox/private_tmp.h), which the caller makes otherwise.
  bool shared_tmp = false;
  // sandbox_workspace_write.protected_paths: paths another tool runs or reads without asking
  // (an editor's tasks, another agent's hooks, direnv, a shell's start-up files), kept
  // read-only wherever they lie inside a writable root, existing or not. A relative entry
  // names a path at the top of every writable root, an absolute one (the caller expands "~/")
  // itself; a trailing '/' marks a directory. `.agentexec/` and `.codex/` are always added.
  std::vector<std::string> protected_paths;
  // The run's own /tmp on the host (a PrivateTmp's path), made by the caller; empty: none.
  // With it, neither the host's /tmp nor $TMPDIR is a writable root.
  std::string private_tmp;
  // require_full_isolation (top level): a sandbox without its mount or PID namespace is an
  // error (exit 3) instead of a warning.
  bool require_full_isolation = false;
  // Directories that stay read-only to commands wherever they lie inside a writable root,
  // whatever their name: agentexec's home and $CODEX_HOME (their config.toml name the MCP
  // servers and providers the next run starts, outside any sandbox). Absolute.
  std::vector<std::string> read_only_dirs;
};

// Whether a run under `settings` gets its own /tmp (sandbox/private_tmp.h): workspace-write,
// unless /tmp is shared (shared_tmp) or kept read-only (exclude_slash_tmp).
bool WantsPrivateTmp(const Settings& settings);

// Resolved policy: absolute, canonical paths.
struct Policy {
  Mode mode = Mode::kReadOnly;
  std::vector<std::string> writable_roots;
  // `<root>/.git` and `<root>/.agentexec` of each writable root, listed whether or not they
  // exist yet, plus a linked worktree's git dir and common dir; and, where they exist, those
  // of every parent directory of the cwd and of the roots, $GIT_DIR and $GIT_COMMON_DIR, and
  // every nested repository, submodule and worktree found inside a root, at any depth; and
  // each of Settings::read_only_dirs that lies below a writable root.
  std::vector<std::string> read_only_carveouts;
  // (st_dev, st_ino) of each carve-out that existed when the policy was built (a nested one:
  // when NestedScan::Finish added it): agentexec's own
  // writes (ConfinedFs) refuse to pass through them under whatever name a command has since
  // renamed a parent to, as the mount layer does for commands (HeldCarveout).
  std::vector<std::pair<dev_t, ino_t>> carveout_ids;
  // Protected paths (Settings::protected_paths, the homes in read_only_dirs) inside a writable
  // root that did not exist when the policy was built: each is made empty before the first
  // command (sandbox/placeholders.h) so that it is a read-only carve-out a command cannot
  // create, and removed again at the end while still empty (the homes are kept, 0700).
  struct Placeholder {
    std::string path;
    bool directory = true;  // false: an empty file (an absolute file entry: a home's dotfile)
    bool home = false;      // agentexec's or codex's home: made 0700 and kept
  };
  std::vector<Placeholder> placeholders;
  // The directories between a writable root and a protected path below it: each is its own
  // mount in a command's namespace, so none can be renamed to take a protected path along.
  std::vector<std::string> pinned;
  bool network_access = false;
  uint16_t proxy_port = 0;  // Settings::proxy_port, workspace-write only; never with network_access
  bool require_full_isolation = false;  // Settings::require_full_isolation
  // The run's own /tmp on the host (Settings::private_tmp, canonical; also a writable root),
  // which commands see at /tmp in their mount namespace; empty: none.
  std::string private_tmp;
  // Things the user should know but that do not stop the run (e.g. a --add-dir that does not
  // exist and was skipped). Callers show them as warnings.
  std::vector<std::string> warnings;

  bool unrestricted() const { return mode == Mode::kDangerFullAccess; }
  // True when a write to `path` (absolute) is allowed by this policy: ConfinedFs::Target.
  bool CanWrite(std::string_view path) const;
};

// cwd must be absolute. $TMPDIR is read from the environment unless excluded. The whole
// policy, nested repositories included: the walk of every writable root runs here.
Result<Policy> BuildPolicy(const Settings& settings, const std::string& cwd);

// The same without the nested repositories: a policy that must not confine anything until
// NestedScan::Finish has completed it.
Result<Policy> BuildPolicyWithoutNested(const Settings& settings, const std::string& cwd);

// The nested repositories of a policy's writable roots, searched once something will need
// them: on a thread of its own from Start (the session calls it when the model announces a
// tool call, `agentexec sandbox` at once), or else by Finish. The session waits for them
// before its first tool call, so no command or file change runs before the carve-outs it needs
// are known; a run that calls no tool never searches, and so never pays for the size of its
// workspace or of /tmp. The walk has no bound (nested_walk.h). Start and Finish are called
// from one thread.
class NestedScan {
 public:
  // The search of the writable roots of `base` (none outside workspace-write), to end early
  // once `cancel` is cancelled. Nothing is searched yet.
  NestedScan(const Policy& base, const CancelToken& cancel);
  ~NestedScan();  // stops the search and waits for it
  NestedScan(const NestedScan&) = delete;
  NestedScan& operator=(const NestedScan&) = delete;
  NestedScan(NestedScan&&) = delete;
  NestedScan& operator=(NestedScan&&) = delete;

  // Starts the search on a thread of its own, unless it has started, there is nothing to
  // search, or no thread is to be had (Finish then searches). At the caller's priority: it
  // starts when a call is coming, which will wait for it, and only the stream's reading runs
  // beside it (a lower one would make that wait as long as the machine is busy).
  void Start();

  // Waits for the search (searching on the caller's thread if it has not started) and adds
  // what it found to `policy` (the base policy, or a copy of it): the carve-outs and their
  // identities. An error when the search was cancelled before it was complete: `policy` then
  // lacks carve-outs and must confine nothing. Once: a second call returns the first one's
  // answer and adds nothing.
  Status Finish(Policy* policy);

 private:
  void Search();

  std::vector<std::string> roots_;
  const CancelToken& cancel_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  bool started_ = false;            // Start() made the thread
  bool searched_ = false;           // Search() ran (on the thread, joined, or in Finish)
  bool complete_ = false;           // ... and saw every directory
  std::vector<std::string> found_;  // the carve-outs it found
  std::optional<Status> finished_;  // Finish's answer, once given
};

}  // namespace ae::sandbox
