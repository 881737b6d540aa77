#include "sandbox/seccomp.h"

#include <fmt/format.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <memory>

#include "base/fd.h"

namespace ae::sandbox::seccomp {
namespace {

struct CtxDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

Error LibError(const char* what, int rc) {
  return MakeError(fmt::format("sandbox: seccomp {}: {}", what, std::strerror(-rc)));
}

// Refused in every confined mode: they reach other processes' memory (ptrace,
// process_vm_*), bypass the syscall filter (io_uring does socket/openat on its own),
// change the mount tree the carve-outs rely on, act on the kernel itself, or write to state
// shared with the world outside (keyrings).
constexpr const char* kAlwaysRefused[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "iopl",
    "ioperm",
    "open_by_handle_at",
    // The kernel keyrings are shared with processes outside the sandbox.
    "add_key",
    "keyctl",
    "request_key",
};

// fchmodat2 (Linux 6.6) is newer than some libseccomp releases; x86_64's number.
constexpr int kFchmodat2 = 452;

}  // namespace

Result<std::vector<sock_filter>> BuildProgram(const Policy& policy) {
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return MakeError("sandbox: seccomp_init failed");
  // Only the native ABI: i386 (socketcall hides its arguments) and x32 would get around the
  // argument checks below, so they end the process.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
      rc != 0) {
    return LibError("bad-arch action", rc);
  }
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : kAlwaysRefused) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // unknown to this libseccomp: nothing to refuse
    if (int rc = seccomp_rule_add(ctx.get(), eperm, nr, 0); rc != 0) return LibError(name, rc);
  }
  // Pushing characters into the terminal's input queue would type commands into the shell
  // that started us, outside the sandbox.
  // TIOCSETD swaps the line discipline and TIOCCONS redirects console output, both of a
  // terminal the command may share with the user. Every other request works, so a terminal
  // of the command's own (a pty it opened) behaves normally.
  for (unsigned long request :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX),
        static_cast<unsigned long>(TIOCSETD), static_cast<unsigned long>(TIOCCONS)}) {
    if (int rc = seccomp_rule_add(ctx.get(), eperm, SCMP_SYS(ioctl), 1,
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, request));
        rc != 0) {
      return LibError("ioctl", rc);
    }
  }
  // Set-id bits: a setuid-root file root leaves in the workspace stays one outside the
  // sandbox, where nosuid and no_new_privs no longer apply. Refused wherever a mode is given:
  // chmod family, and open/creat/mknod creating a file (the mode is ignored without O_CREAT,
  // and callers pass 0 or permission bits there). openat2 carries its mode in a struct the
  // filter cannot read: ENOSYS, which callers treat as "use openat". File capabilities need
  // CAP_SETFCAP, which the capability drop removes (capabilities.h).
  struct ModeArg {
    const char* name;
    unsigned arg;
  };
  for (const ModeArg& call : {ModeArg{"chmod", 1}, ModeArg{"fchmod", 1}, ModeArg{"fchmodat", 2},
                              ModeArg{"fchmodat2", 2}, ModeArg{"open", 2}, ModeArg{"openat", 3},
                              ModeArg{"creat", 1}, ModeArg{"mknod", 1}, ModeArg{"mknodat", 2}}) {
    int nr = seccomp_syscall_resolve_name(call.name);
    if (nr == __NR_SCMP_ERROR && std::strcmp(call.name, "fchmodat2") == 0) nr = kFchmodat2;
    if (nr == __NR_SCMP_ERROR) continue;
    for (scmp_datum_t bit : {scmp_datum_t{S_ISUID}, scmp_datum_t{S_ISGID}}) {
      scmp_arg_cmp cmp = {call.arg, SCMP_CMP_MASKED_EQ, bit, bit};
      if (int rc = seccomp_rule_add_array(ctx.get(), eperm, nr, 1, &cmp); rc != 0) {
        return LibError(call.name, rc);
      }
    }
  }
  if (int nr = seccomp_syscall_resolve_name("openat2"); nr != __NR_SCMP_ERROR) {
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), nr, 0); rc != 0) {
      return LibError("openat2", rc);
    }
  }
  if (!policy.network_access) {
    // Only Unix sockets can be created, so connect/bind/sendto/... can only ever act on Unix
    // sockets: their address arguments are pointers seccomp cannot read, and they need no
    // rule of their own. io_uring (refused above) would otherwise create sockets.
    for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
      if (int rc = seccomp_rule_add(ctx.get(), eperm, nr, 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
          rc != 0) {
        return LibError("socket", rc);
      }
    }
  }

  Fd mem(static_cast<int>(::memfd_create("agentexec-seccomp", MFD_CLOEXEC)));
  if (!mem) {
    return MakeError(fmt::format("sandbox: memfd_create: {}", std::strerror(errno)));
  }
  if (int rc = seccomp_export_bpf(ctx.get(), mem.get()); rc != 0) return LibError("export", rc);
  off_t size = ::lseek(mem.get(), 0, SEEK_END);
  if (size <= 0 || size % sizeof(sock_filter) != 0 || ::lseek(mem.get(), 0, SEEK_SET) != 0) {
    return MakeError("sandbox: seccomp export produced no program");
  }
  std::vector<sock_filter> program(static_cast<size_t>(size) / sizeof(sock_filter));
  char* out = reinterpret_cast<char*>(program.data());
  size_t done = 0;
  while (done < static_cast<size_t>(size)) {
    ssize_t n = ::read(mem.get(), out + done, static_cast<size_t>(size) - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return MakeError("sandbox: reading the exported seccomp program failed");
    done += static_cast<size_t>(n);
  }
  return program;
}

bool Install(const sock_fprog* program, int* err) noexcept {
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, program, 0, 0) != 0) {
    *err = errno;
    return false;
  }
  return true;
}

}  // namespace ae::sandbox::seccomp
