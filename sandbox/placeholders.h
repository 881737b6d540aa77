// Placeholders: a protected path that does not exist yet (`.agentexec/`, `.codex/`, an
// editor's `.vscode/`, `.envrc`, a shell's start-up file in a home inside the workspace) could
// be created by a command and read or run by the next run or another tool. So each is made
// empty before the first command: the mount layer then keeps it read-only like any carve-out
// (a command can neither write into it nor remove or rename it, as it is a mount point), and
// it is removed again when the run ends while it is still the empty thing made here. A home's
// dotfile is made an empty file (the shell or git that reads it takes it as it is); a name at
// the top of a root an empty directory, which no file can then be made at and which git does
// not see. The homes are made 0700 and kept.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "sandbox/policy.h"

namespace ae::sandbox {

class Placeholders {
 public:
  Placeholders() = default;
  Placeholders(Placeholders&& other) noexcept;
  Placeholders& operator=(Placeholders&& other) noexcept;
  Placeholders(const Placeholders&) = delete;
  Placeholders& operator=(const Placeholders&) = delete;
  ~Placeholders();  // RemoveAll

  // Makes each of `policy`'s placeholders that is still missing (with the directories above
  // it, also removed at the end), and adds its identity to the policy's carve-outs. What cannot
  // be made is said in `warnings` and stays protected by path only.
  void Make(Policy* policy, std::vector<std::string>* warnings);

  // Removes what Make made, deepest first, each only while it is still the empty file or
  // directory it made (same inode); a command cannot have filled one.
  void RemoveAll();
  // Leaves them to another process (a forked child's copy): this object removes nothing.
  void Release() { made_.clear(); }

 private:
  struct Made {
    std::string path;
    dev_t dev = 0;
    ino_t ino = 0;
    bool directory = true;
  };
  std::vector<Made> made_;
};

}  // namespace ae::sandbox
