// The walk that finds nested repositories inside a writable root: every `.git` (directory or
// gitfile) and `.agentexec` below it, at any depth, for the read-only carve-outs (policy.h).
// It has no bound: a repository past any bound would silently be writable. It is made cheap
// instead (descriptor-relative opens, one large getdents64 buffer, no path string per entry, a
// directory without subdirectories looked into by name, not listed, the tree shared among
// the CPUs) and runs off the start-up path (NestedScan in policy.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ae::sandbox {

// What the walk found: a directory below the root holding a `.git` entry (`dir` without the
// name), an `.agentexec` entry (`dir` is then the whole path of the entry), or a directory of
// ours it may not read or search (kUnsearchable: `dir` is that directory, or the root). A
// command can chmod a directory it owns to hide what is below it from the next run's walk, so
// what the walk cannot see is to be kept read-only whole.
enum class NestedHit { kGit, kAgentexec, kUnsearchable };
using NestedVisitor = std::function<void(NestedHit hit, const std::string& dir)>;

// Walks every directory below `root` (absolute, canonical), depth first, calling `visit` for
// each hit; the root's own `.git` and `.agentexec` are not reported (the policy lists them
// whether or not they exist). Symlinks are never followed, a `.git` or `.agentexec` is never
// entered, and a directory that cannot be opened is skipped, unless it is ours and the cause
// is its mode (EACCES): that is reported as kUnsearchable. The directories in `skip` (canonical,
// below `root`: other roots, walked on their own) are not entered. `stop` is asked before each
// subdirectory is opened or looked into by name; when it says yes the walk ends at once and returns
// false; so it does when it runs out of descriptors or memory (EMFILE, ENFILE, ENOMEM). True: the
// walk saw the whole tree. With `threads` above 1 the tree is split among that many threads (`stop`
// is then asked on each); `visit` is never called by two at once.
bool WalkNested(const std::string& root, const std::vector<std::string>& skip,
                const std::function<bool()>& stop, const NestedVisitor& visit,
                unsigned threads = 1);

// Whether the file system of the directory `fd` keeps st_nlink as 2 + its subdirectories
// (ext2-4, tmpfs, xfs; not btrfs or overlayfs): only there can the walk tell, without listing,
// that a directory it cannot list has no subdirectory, and look into it by name.
bool KeepsSubdirectoryCount(int fd);

// The threads a walk should use here: the CPUs this process may run on, at most 4; one under
// a descriptor limit below 1,024.
unsigned WalkThreads();

}  // namespace ae::sandbox
