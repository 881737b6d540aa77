// Keeping the provider's key out of reach once it has been read. /proc/PID/environ shows a
// process's ORIGINAL environment block (the bytes the kernel put on its stack at execve), which
// unsetenv does not change; so the values are overwritten in that block itself, through the
// pointers main() received before any setenv could move `environ`.
#pragma once

#include <string>
#include <vector>

namespace ae {

// Called first thing in main() with its third argument. Without it (unit tests),
// ForgetSecretVariables only removes the variables from `environ`.
void RememberStartupEnvironment(char** envp);

// Overwrites the values of the variables named `names` in the startup block with NUL bytes,
// removes them from `environ`, and with `non_dumpable` makes this process non-dumpable
// (PR_SET_DUMPABLE 0: its /proc/PID/environ and mem then belong to root and ptrace needs
// CAP_SYS_PTRACE; children get dumpability back at execve). Read every value first. The one
// way both `agentexec exec` (engine/session.cc: the key it read, non-dumpable under
// danger-full-access) and `agentexec batch run` (batch/run.cc: every credential-looking
// variable, once its copy for the tasks is taken; always non-dumpable) let go of secrets.
// /proc/self stays open to the process itself (its fd links, exe).
void ForgetSecretVariables(const std::vector<std::string>& names, bool non_dumpable);

// For variables agentexec does not read but passes on (a GITHUB_TOKEN that a user's
// shell_environment_policy gives commands): the value moves to a heap copy in `environ` (made
// by setenv: the only copy this leaves) and is overwritten in the startup block, so
// /proc/PID/environ no longer shows it.
void MoveVariablesOffStartupBlock(const std::vector<std::string>& names);

// Overwrites the string's bytes with zeros, its whole capacity (a short string's inline buffer
// too), and empties it: for a copy of a secret that is no longer needed, so its bytes do not
// stay behind in freed memory (clear() or the destructor frees them as they are).
void WipeString(std::string& s);
// WipeString on each ("NAME=value" environments), then clear().
void WipeStrings(std::vector<std::string>& strings);

// The names in `environ` that look like credentials: KEY, SECRET or TOKEN in them, any case
// (the same words commands' default environment excludes).
std::vector<std::string> CredentialLookingVariables();

}  // namespace ae
