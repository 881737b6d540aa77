// Applying a parsed patch: every new file content is computed in memory first (so a patch
// that does not apply changes nothing), then each file is replaced atomically (temp file in
// the same directory, fsync, renameat, mode kept), and a failure midway restores the files
// already replaced. Either every file changes or none does. Every read and write goes through
// sandbox::ConfinedFs: confined to the writable roots as strictly as a command's.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/events/events.h"
#include "engine/tools/apply_patch/parser.h"
#include "sandbox/confined_fs.h"
#include "sandbox/policy.h"

namespace ae::patch {

// The final state of one file once the whole patch is applied.
struct FileOp {
  std::string path;                     // absolute, symlinks resolved: what is written
  std::optional<std::string> content;   // nullopt: the file is removed
  std::optional<std::string> original;  // what is there now; nullopt: nothing
  mode_t mode = 0;                      // the original's permission bits
};

struct Plan {
  std::vector<FileOp> ops;          // one per path, sorted by path
  std::vector<FileChange> changes;  // for the file_change item, sorted by path
  std::string summary;              // "A path\nM path\nD path\n", paths as the patch wrote them
};

// Absolute path of a patch path: relative ones against cwd, lexically normalised.
std::string ResolvePath(const std::string& cwd, const std::string& path);

// The item entries a patch names (before anything is read): what a failed patch reports.
std::vector<FileChange> NamedChanges(const Patch& patch, const std::string& cwd);

// Refuses, with a message naming the path and the mode, any write the policy does not allow.
Status CheckWritable(const Patch& patch, const std::string& cwd, const sandbox::Policy& policy);

// Reads the files (through `cfs`, the resolver the commit uses) and computes every result.
// Errors use codex's wording, e.g. "Failed to find expected lines in /abs/f.txt:\n<lines>".
// Anything that is not a regular file (FIFO, socket, device) is refused unopened.
Result<Plan> PlanPatch(const Patch& patch, const std::string& cwd, const sandbox::ConfinedFs& cfs);

// Writes the plan to disk through `cfs`, all or nothing.
Status Commit(const Plan& plan, const sandbox::ConfinedFs& cfs);

}  // namespace ae::patch
