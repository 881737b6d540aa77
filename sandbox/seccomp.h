// seccomp: the system-call layer. libseccomp compiles the filter in the parent and exports
// the BPF program to memory; the child only installs it with prctl.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "base/result.h"
#include "sandbox/policy.h"

namespace ae::sandbox::seccomp {

// Always (every confined mode): ptrace, process_vm_readv/writev, io_uring_*, the mount API,
// kernel modules, kexec, iopl/ioperm, open_by_handle_at, the keyring calls, and the
// TIOCSTI/TIOCLINUX/TIOCSETD/TIOCCONS ioctls fail with EPERM; so do chmod/fchmod/fchmodat(2),
// open/openat/creat and mknod(at) with S_ISUID or S_ISGID in the mode; openat2 fails with
// ENOSYS (its mode is out of the filter's reach). With the network off: socket and socketpair fail
// with EPERM for every family except AF_UNIX. Other architectures (i386 via int 0x80, x32) kill the
// process.
Result<std::vector<sock_filter>> BuildProgram(const Policy& policy);

// In the child. Async-signal-safe. Needs no_new_privs.
bool Install(const sock_fprog* program, int* err) noexcept;

}  // namespace ae::sandbox::seccomp
