// The child's checklist: everything a process does to itself between fork and execve, as one
// ordered list of small steps (kSteps in sandbox/checklist.cc, with the reason for each
// position beside it), in the manner of nsjail and bubblewrap.
//
// One list serves every user: the spawner's child (sandbox/spawn.cc) runs all of it, from its
// own session to execve; a process that confines itself and then execs on its own
// (`agentexec sandbox`, the preflight's probe) runs the sandbox's steps only, through
// ApplyInChild (sandbox/prepared.h).
//
// One error convention: a step that fails returns false with the name of what failed (a static
// string, or one owned by the prepared sandbox, e.g. "make read-only /ws/.git") and its errno
// (sandbox/step.h). The spawner reports it as "STEP: strerror", and a sandbox step as
// "sandbox: STEP: strerror".
//
// Everything here is async-signal-safe and allocates nothing: other threads of the parent may
// have held malloc's lock at the moment of fork.
#pragma once

#include <sys/types.h>

#include "sandbox/prepared.h"

namespace ae::sandbox {

// What the child is given, all built in the parent before fork.
struct ChildPlan {
  // true: the spawner's child, which runs every step and ends in execve. false: only the
  // sandbox's steps, after which the caller execs on its own.
  bool spawner = false;
  const PreparedSandbox* sandbox = nullptr;  // null: unconfined (the spawner only)
  // The spawner's alone:
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = "";  // "": stay where the parent is
  int devnull = -1;
  int out_w = -1;   // stdout and stderr (a pipe), or -1 with a terminal
  int err_w2 = -1;  // stderr's own pipe, or -1 (stderr shares out_w)
  int in_r = -1;    // stdin pipe, or -1
  int tty = -1;     // the pseudo-terminal's slave side, or -1
  pid_t parent = 0;
  int watch_fd = -1;  // WriteWatch's child end (sandbox/write_watch.h), or -1
  const sock_fprog* watch_program = nullptr;  // the filter it asked for (null: none here)
  int proxy_fd = -1;  // the listener's channel to agentexec (sandbox/network.h), or -1
};

struct StepFailure {
  const char* step = "";
  int err = 0;
  bool sandbox = false;  // one of the sandbox's steps (reported as "sandbox: STEP")
};

// The name execve's step fails with (the spawner exits 127 when it is ENOENT, else 126).
inline constexpr const char* kExecStep = "execve";

// Runs the steps for `plan` in order. Returns false with *failure at the first that fails.
// The spawner's child never returns true (execve replaced it); anyone else gets true once the
// sandbox is in place. With a PID namespace the calling process does not return at all: it
// supervises (sandbox/containment.h), and the steps after the namespace's init continue in the
// init and then in the command's process.
bool RunChecklist(const ChildPlan& plan, StepFailure* failure) noexcept;

}  // namespace ae::sandbox
