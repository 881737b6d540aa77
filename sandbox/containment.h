// Process-tree containment: every process a command starts ends with it.
//
// With a PID namespace, the process that applies the sandbox (call it the supervisor) forks the
// namespace's init, and the init forks the command:
//
//   agentexec ── supervisor (our child, parent-death signal) ── init (pid 1) ── command ── ...
//
// The init reaps orphans and exits as soon as the command's own process ends; the kernel then
// kills everything left in the namespace (setsid, setpgid, double-forked daemons alike). The init
// has a parent-death signal on the supervisor, which has one on agentexec, so killing either
// (timeout, cancellation, agentexec's SIGTERM, or agentexec SIGKILLed) ends the whole tree.
// The supervisor and the init exit the way the command did: its exit code, or the same signal.
//
// The command always starts a new session (setsid): it loses the terminal agentexec runs in,
// so it cannot make itself that terminal's foreground group or read what the user types through
// /dev/tty. A command given a terminal of agentexec's own (a fresh pseudo-terminal, exec_command
// with tty) takes that one as its controlling terminal, as it would unconfined: /dev/tty then
// opens, and its process group is the terminal's foreground group.
//
// Everything here runs between fork and execve: async-signal-safe system calls only.
#pragma once

#include <sys/types.h>

namespace ae::sandbox {

// In the process that has just unshared CLONE_NEWPID: forks the namespace's init. Returns true
// in the init; the calling process becomes the supervisor and never returns (it exits as the
// init does). Returns false with *failed_step/*err when the fork fails.
bool ForkNamespaceInit(const char** failed_step, int* err) noexcept;

// In the init (pid 1), with the confinement complete: forks the command's process and returns
// true in it (in its new session, as EnterNewSession); the init stays behind reaping and never
// returns.
bool ForkCommandUnderInit(int terminal_fd, const char** failed_step, int* err) noexcept;

// The command's process leads a new session. Nothing to do if it already does; a process
// group leader cannot call setsid, so then it forks and the parent follows the child's exit.
// `terminal_fd` (-1: none) is a terminal of agentexec's own that no session controls: the new
// session takes it as its controlling terminal.
bool EnterNewSession(int terminal_fd, const char** failed_step, int* err) noexcept;

// Waits for `child` (reaping every other child meanwhile) and ends the same way: its exit code,
// or its signal (re-raised without a core dump). Used by a process that only supervises.
[[noreturn]] void FollowChild(pid_t child) noexcept;

}  // namespace ae::sandbox
