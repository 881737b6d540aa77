// Removing a directory tree that commands wrote, as its owner, without trusting what is in it:
// the run's private /tmp (sandbox/private_tmp.h) after its commands are gone. Everything is
// done through descriptors (openat, unlinkat with O_NOFOLLOW), so a symlink or a directory
// swapped for one is removed, never followed; a directory a command closed with its mode
// (chmod 0, 0500) is opened up first; a mount point is not crossed; and a tree of any depth is
// removed with a bounded number of descriptors (past a depth, a subtree is moved up beside the
// top and removed from there).
#pragma once

#include <string>

namespace ae {

// Removes `name` (one component) in the directory `dirfd` and everything below it. 0 when it
// is gone (or was never there), else the errno of the first thing that could not be removed;
// the rest is still removed where it can be.
int RemoveTreeAt(int dirfd, const std::string& name);

}  // namespace ae
