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
// CAP_SYS_PTRACE; children get dumpability back at execve). Read every value first.
void ForgetSecretVariables(const std::vector<std::string>& names, bool non_dumpable);

// For variables agentexec does not read but passes on (a GITHUB_TOKEN that a user's
// shell_environment_policy gives commands): the value moves to a heap copy in `environ` and is
// overwritten in the startup block, so /proc/PID/environ no longer shows it.
void MoveVariablesOffStartupBlock(const std::vector<std::string>& names);

// The names in `environ` that look like credentials: KEY, SECRET or TOKEN in them, any case
// (the same words commands' default environment excludes).
std::vector<std::string> CredentialLookingVariables();

}  // namespace ae
