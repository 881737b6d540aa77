// ConfinedFs: the file-system changes agentexec makes for the model (apply_patch), confined
// as strictly as a command's. agentexec writes outside the sandbox, so a path string checked
// against the policy and then opened again is a race a process left running by an earlier
// command can win (swap a directory for a symlink in between). Here every component is opened
// with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
// RESOLVE_NO_XDEV) from a descriptor of the writable root that contains the path (base/beneath.h,
// the one openat2 call agentexec has), the policy check is made on exactly the string that is
// opened that way, and every change is made through the opened parent descriptor (temp file +
// renameat as base/beneath.h's ReplaceAt, mkdirat, unlinkat). A swap can only make an
// operation fail (ELOOP, ENOENT), never move it. Without openat2 (Linux < 5.6) every confined
// operation fails with ENOSYS: closed, not open.
//
// Every call returns 0 or an errno, so callers word their own messages (codex's) and tests
// check the exact errno.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "sandbox/policy.h"

namespace ae::sandbox {

// A directory opened beneath a writable root, and one name in it.
struct Location {
  Fd dir;            // O_RDONLY | O_DIRECTORY, opened component by component
  std::string name;  // a single component: never empty, ".", ".." or containing '/'
  std::string path;  // the absolute path this names (for messages)
};

struct FileRead {
  std::optional<std::string> content;  // nullopt: nothing there (ENOENT)
  mode_t mode = 0;                     // permission bits of what is there
  mode_t type = 0;                     // S_IFMT bits when it is refused as not a regular file
};

class ConfinedFs {
 public:
  // `policy` must outlive this object.
  explicit ConfinedFs(const Policy& policy) : policy_(policy) {}

  // Where a write to `path` (absolute) lands, as a command's write would: symlinks that exist
  // now are followed. Then the same check as WriteCheck. Errors: EACCES (read-only sandbox, or
  // outside every writable root), EROFS (a read-only carve-out: .git or .agentexec at any
  // depth, or a listed carve-out, by either spelling).
  int Target(const std::string& path, std::string* resolved) const;

  // Could a confined command write `path` (absolute, normalised, no symlinks assumed)? 0,
  // EACCES or EROFS as above. Pure string check: it is what Open* then opens beneath the root.
  int WriteCheck(const std::string& path) const;

  // Opens the parent of `path` (a resolved target: WriteCheck must pass) beneath its root.
  // With `made` non-null, missing directories are created (mkdirat) and appended to it,
  // outermost first, each as its parent's descriptor and its name (so RemoveDir undoes it
  // exactly). Symlinks anywhere: ELOOP; a mount point crossed: EXDEV.
  int OpenParent(const std::string& path, Location* out, std::vector<Location>* made) const;

  // Reads a regular file. Anything else (FIFO, socket, device, directory) is refused before it
  // is opened, with EINVAL (EISDIR for a directory) and `type` set; the open itself is
  // O_NONBLOCK | O_NOFOLLOW so a file swapped in meanwhile cannot block or redirect it.
  int Read(const Location& at, FileRead* out) const;

  // Replaces `at` atomically: a temp file in the same directory, written and fsynced, then
  // renameat over the name. `mode` is applied when `keep_mode` (else 0666 & ~umask).
  int Replace(const Location& at, const std::string& content, mode_t mode, bool keep_mode) const;

  int Unlink(const Location& at) const;
  int RemoveDir(const Location& at) const;  // an empty directory (rolling back a mkdirat)
  int SyncDir(const Location& at) const;

  // False when the kernel has no openat2: a confined policy then fails every call (ENOSYS).
  static bool Openat2Available();

 private:
  int OpenRoot(const std::string& root, Fd* out) const;
  int OpenBeneath(int dirfd, const std::string& rel, int flags, mode_t mode, Fd* out) const;

  const Policy& policy_;
};

// "a FIFO", "a socket", "a character device", ... for messages about refused files.
const char* FileTypeName(mode_t type);

}  // namespace ae::sandbox
