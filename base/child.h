// Steps every child takes between fork and execve, shared by the command spawner and the
// MCP transport. Async-signal-safe only: the parent may have other threads.
#pragma once

#include <sys/types.h>

namespace ae {

// Default dispositions for every signal and an empty mask (the parent blocks all for fork).
void ResetSignalsInChild() noexcept;

// Own process group, so the whole tree can be killed, and SIGKILL when `parent` dies. On
// failure returns false with *step and *err set. If the parent is already gone (it died
// before the parent-death signal was armed), exits with `orphan_exit_code`.
bool EnterOwnGroupTiedToParent(pid_t parent, int orphan_exit_code, const char** step,
                               int* err) noexcept;

// As EnterOwnGroupTiedToParent, but the child leads a new session (setsid): its own process
// group and no controlling terminal, so a command cannot reach the user's terminal through
// /dev/tty or make itself its foreground group. Must be called before anything makes the child
// a process group leader (setsid then fails).
bool EnterOwnSessionTiedToParent(pid_t parent, int orphan_exit_code, const char** step,
                                 int* err) noexcept;

// Makes the terminal open on `fd` the controlling terminal of the caller's session (the caller
// must lead a session that has none, e.g. right after EnterOwnSessionTiedToParent).
bool TakeControllingTerminal(int fd, const char** step, int* err) noexcept;

// Every descriptor from 3 up becomes close-on-exec: ones other threads opened without
// O_CLOEXEC must not leak into the program.
void CloseOnExecFrom3() noexcept;

}  // namespace ae
