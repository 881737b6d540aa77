// Opening beneath a directory descriptor: the one way agentexec opens a file at a path that a
// confined command or a pull request can prepare. agentexec runs outside the sandbox with the
// user's full rights, so a path it opens by name (AGENTS.md committed as a symlink to
// /proc/self/environ, -o FILE's directory swapped for a symlink mid-run) would carry its
// rights wherever the link points. Here the trusted directory is opened once and every name is
// resolved beneath that descriptor with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): a
// symlink may move within the directory, never out of it, and no /proc magic link is followed.
// Without openat2 (Linux < 5.6) the walk is made component by component with O_NOFOLLOW: no
// symlink at all, stricter rather than looser.
//
// Calls return 0 or an errno, so callers word their own messages and tests check the errno.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/fd.h"

namespace ae {

// How OpenBeneath resolves; flags to combine.
enum Beneath : unsigned {
  kBeneath = 0,                  // symlinks that stay beneath the directory are followed
  kBeneathNoSymlinks = 1u << 0,  // any symlink on the way fails the open (ELOOP)
  kBeneathNoXdev = 1u << 1,      // a mount point crossed fails the open (EXDEV)
  kBeneathFresh = 1u << 2,       // MakeDirsBeneath: the last directory is made now (else EEXIST)
};

// False when the kernel has no openat2.
bool Openat2Available();

// Opens `rel` beneath `dirfd` with open(2) `flags` and `mode` (O_CLOEXEC is added). `rel` is
// relative; "" and "." name the directory itself. Errors: EXDEV when a symlink or ".." would
// leave `dirfd` (or, with kBeneathNoXdev, cross a mount), ELOOP for a magic link or a symlink
// refused by kBeneathNoSymlinks (and, without openat2, for every symlink), else open's errno.
int OpenBeneath(int dirfd, std::string_view rel, int flags, mode_t mode, unsigned how, Fd* out);

// Opens the directory `rel` beneath `dirfd` (O_RDONLY | O_DIRECTORY), creating what is missing
// one component at a time with mkdirat (0777 less the umask). Each component is opened as
// OpenBeneath does with `how` before anything is made in it: a symlink put in the way is
// refused, never followed.
int MakeDirsBeneath(int dirfd, std::string_view rel, unsigned how, Fd* out);

// Moves `name` (one component) in `dirfd`, when it exists, out of the way: renamed within
// `dirfd` to "PREFIX-NAME-K", the first K (1 to 9999) no entry has, never over an entry
// (RENAME_NOREPLACE). 0 when `name` does not exist (`aside` then empty), else rename's errno
// (EEXIST when every K is taken).
int MoveAsideAt(int dirfd, const std::string& name, std::string_view prefix, std::string* aside);

// Replaces `name` (one component) in `dirfd` atomically: a new file under an unpredictable
// name is created there with O_CREAT | O_EXCL | O_NOFOLLOW (a planted name is never opened),
// `content` is written and fsynced, then it is renamed over `name` within the same descriptor
// (a symlink at `name` is replaced, never followed). The file is made with `mode` (less the
// umask), or exactly `mode` when `exact_mode`. On failure the new file is removed.
int ReplaceAt(int dirfd, const std::string& name, std::string_view content, mode_t mode,
              bool exact_mode);

// For tests: behave as a kernel without openat2 (true) or as the kernel is (false).
void PretendNoOpenat2ForTesting(bool pretend);

}  // namespace ae
