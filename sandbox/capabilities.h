// Capabilities: Landlock and seccomp do not stop root from loading a module, poking I/O
// ports or reading the kernel log. A confined command keeps only the capabilities a default
// Docker container has (file ownership, setuid/setgid, kill, chroot, mknod, raw and
// low-port sockets), so running as root in CI keeps working for files, not for the kernel.
// Except CAP_SETFCAP: without it no file capability (security.capability) can be set, so a
// command cannot leave a privilege-carrying binary behind.
#pragma once

#include <cstdint>

namespace ae::sandbox {

// Bit mask (1 << CAP_x) of the capabilities a confined command keeps.
uint64_t KeptCapabilities();

// In the child. Async-signal-safe. Drops the others from the bounding, ambient, inheritable,
// permitted and effective sets. A process that cannot change its bounding set (no
// CAP_SETPCAP) and is not root gains nothing on execve under no_new_privs, so that is fine;
// root without CAP_SETPCAP fails here.
bool DropCapabilities(const char** failed_step, int* err) noexcept;

}  // namespace ae::sandbox
