#include "sandbox/seccomp.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

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

constexpr uint32_t kUserNotif = SECCOMP_RET_USER_NOTIF;

// libseccomp compiles in memory; the child gets the raw BPF program, installed with one
// system call.
Result<std::vector<sock_filter>> Export(scmp_filter_ctx ctx) {
  Fd mem(static_cast<int>(::memfd_create("agentexec-seccomp", MFD_CLOEXEC)));
  if (!mem) {
    return MakeError(fmt::format("sandbox: memfd_create: {}", std::strerror(errno)));
  }
  if (int rc = seccomp_export_bpf(ctx, mem.get()); rc != 0) return LibError("export", rc);
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

// The write watch's calls, by name (resolved per architecture: aarch64 has only the *at
// forms). {name, {path args}, {dirfd args}}.
struct WatchedName {
  const char* name;
  WatchedCall call;
};
constexpr WatchedCall Call(int path0, int dirfd0, bool follows = false, bool metadata = false,
                           int flags_arg = -1) {
  return {-1, {path0, -1}, {dirfd0, -1}, follows, flags_arg, metadata, 0};
}
constexpr WatchedCall Two(int path0, int dirfd0, int path1, int dirfd1) {
  return {-1, {path0, path1}, {dirfd0, dirfd1}, false, -1, false, 0};
}
constexpr WatchedName kWatched[] = {
    {"open", Call(0, -1, true, false, 1)},
    {"openat", Call(1, 0, true, false, 2)},
    {"creat", Call(0, -1, true)},
    {"mkdir", Call(0, -1)},
    {"mkdirat", Call(1, 0)},
    {"mknod", Call(0, -1)},
    {"mknodat", Call(1, 0)},
    {"unlink", Call(0, -1)},
    {"unlinkat", Call(1, 0)},
    {"rmdir", Call(0, -1)},
    {"rename", Two(0, -1, 1, -1)},
    {"renameat", Two(1, 0, 3, 2)},
    {"renameat2", Two(1, 0, 3, 2)},
    {"link", Call(1, -1)},
    {"linkat", Call(3, 2)},
    {"symlink", Call(1, -1)},
    {"symlinkat", Call(2, 1)},
    {"truncate", {-1, {0, -1}, {-1, -1}, true, -1, false, 3}},
    {"chmod", Call(0, -1, true, true)},
    {"fchmodat", Call(1, 0, false, true)},
    {"fchmodat2", Call(1, 0, false, true)},
    {"chown", Call(0, -1, true, true)},
    {"lchown", Call(0, -1, false, true)},
    {"fchownat", Call(1, 0, false, true)},
    {"utime", Call(0, -1, true, true)},
    {"utimes", Call(0, -1, true, true)},
    {"futimesat", Call(1, 0, true, true)},
    {"utimensat", Call(1, 0, false, true)},
    {"setxattr", Call(0, -1, true, true)},
    {"lsetxattr", Call(0, -1, false, true)},
    {"removexattr", Call(0, -1, true, true)},
    {"lremovexattr", Call(0, -1, false, true)},
};
constexpr size_t kWatchedCount = sizeof kWatched / sizeof kWatched[0];

// kWatched with this architecture's numbers; calls it lacks keep nr -1.
const std::vector<WatchedCall>& WatchedCalls() {
  static const std::vector<WatchedCall> calls = [] {
    std::vector<WatchedCall> out;
    for (const WatchedName& w : kWatched) {
      WatchedCall call = w.call;
      call.nr = seccomp_syscall_resolve_name(w.name);
      if (call.nr == __NR_SCMP_ERROR && std::strcmp(w.name, "fchmodat2") == 0) call.nr = kFchmodat2;
      if (call.nr < 0) call.nr = -1;
      out.push_back(call);
    }
    return out;
  }();
  return calls;
}

// Notifications with SECCOMP_USER_NOTIF_FLAG_CONTINUE: user notifications arrived in 5.0,
// CONTINUE in 5.5, and nothing short of answering one tells them apart; the release does.
bool KernelHasNotifyContinue(std::string* why) {
  if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &kUserNotif) != 0) {
    *why = fmt::format("seccomp user notifications are not available ({})", std::strerror(errno));
    return false;
  }
  struct utsname u {};
  int major = 0, minor = 0;
  if (::uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2) {
    *why = "the kernel release is unreadable";
    return false;
  }
  if (major < 5 || (major == 5 && minor < 5)) {
    *why = fmt::format("Linux {}.{} cannot let a notified call continue (needs 5.5)", major, minor);
    return false;
  }
  return true;
}

}  // namespace

const WatchedCall* FindWatchedCall(int nr) {
  if (nr < 0) return nullptr;
  for (const WatchedCall& call : WatchedCalls()) {
    if (call.nr == nr) return &call;
  }
  return nullptr;
}

namespace {

// The calls that reach for an address outside the proxy (seccomp.h, "network watch").
Status AddNetworkRules(scmp_filter_ctx ctx) {
  // Every connect: its address is a pointer the filter cannot read (most are to the proxy,
  // answered without a look at the namespace).
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(connect), 0); rc != 0) {
    return LibError("connect", rc);
  }
  // A datagram with an address of its own; a connected socket's sends pass null.
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(sendto), 1, SCMP_A4(SCMP_CMP_NE, 0));
      rc != 0) {
    return LibError("sendto", rc);
  }
  for (scmp_datum_t family : {scmp_datum_t{AF_INET}, scmp_datum_t{AF_INET6}}) {
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(socket), 2,
                                  SCMP_A0(SCMP_CMP_EQ, family),
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW));
        rc != 0) {
      return LibError("socket", rc);
    }
  }
  return {};
}

Result<std::vector<sock_filter>> CompileWatchProgram(WatchSet set) {
  std::string why;
  if (!KernelHasNotifyContinue(&why)) return MakeError(why);
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return MakeError("sandbox: seccomp_init failed");
  if (set.network) {
    if (Status added = AddNetworkRules(ctx.get()); !added.ok()) return added.error();
  }
  for (size_t i = 0; set.writes && i < kWatchedCount; ++i) {
    const WatchedCall& call = WatchedCalls()[i];
    if (call.nr < 0) continue;
    const std::string_view name = kWatched[i].name;
    int rc = 0;
    if (name == "open" || name == "openat") {
      // Any of the write flags; one rule each (rules on one call are alternatives).
      const unsigned flags_arg = name == "open" ? 1 : 2;
      for (scmp_datum_t bit : {scmp_datum_t{O_WRONLY}, scmp_datum_t{O_RDWR}, scmp_datum_t{O_CREAT},
                               scmp_datum_t{O_TRUNC}}) {
        scmp_arg_cmp cmp = {flags_arg, SCMP_CMP_MASKED_EQ, bit, bit};
        if ((rc = seccomp_rule_add_array(ctx.get(), SCMP_ACT_NOTIFY, call.nr, 1, &cmp)) != 0) break;
      }
    } else if (name == "utimensat") {
      // A null path is futimens on the descriptor: no path to report.
      rc = seccomp_rule_add(ctx.get(), SCMP_ACT_NOTIFY, call.nr, 1, SCMP_A1(SCMP_CMP_NE, 0));
    } else {
      rc = seccomp_rule_add(ctx.get(), SCMP_ACT_NOTIFY, call.nr, 0);
    }
    if (rc != 0) return LibError(kWatched[i].name, rc);
  }
  return Export(ctx.get());
}

Status RefuseAlwaysRefused(scmp_filter_ctx ctx) {
  for (const char* name : kAlwaysRefused) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // unknown to this libseccomp: nothing to refuse
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0); rc != 0) {
      return LibError(name, rc);
    }
  }
  return {};
}

// Pushing characters into the terminal's input queue would type commands into the shell
// that started us, outside the sandbox.
// TIOCSETD swaps the line discipline and TIOCCONS redirects console output, both of a
// terminal the command may share with the user. Every other request works, so a terminal
// of the command's own (a pty it opened) behaves normally.
Status RefuseTerminalTakeover(scmp_filter_ctx ctx) {
  for (unsigned long request :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX),
        static_cast<unsigned long>(TIOCSETD), static_cast<unsigned long>(TIOCCONS)}) {
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, request));
        rc != 0) {
      return LibError("ioctl", rc);
    }
  }
  return {};
}

// Set-id bits: a setuid-root file root leaves in the workspace stays one outside the
// sandbox, where nosuid and no_new_privs no longer apply. Refused wherever a mode is given:
// chmod family, and open/creat/mknod creating a file (the mode is ignored without O_CREAT,
// and callers pass 0 or permission bits there). openat2 carries its mode in a struct the
// filter cannot read: ENOSYS, which callers treat as "use openat". File capabilities need
// CAP_SETFCAP, which the capability drop removes (capabilities.h).
Status RefuseSetIdModes(scmp_filter_ctx ctx) {
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
      if (int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp); rc != 0) {
        return LibError(call.name, rc);
      }
    }
  }
  if (int nr = seccomp_syscall_resolve_name("openat2"); nr != __NR_SCMP_ERROR) {
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0); rc != 0) {
      return LibError("openat2", rc);
    }
  }
  return {};
}

// No network: only Unix sockets can be created, so connect/bind/sendto/... can only ever act
// on Unix sockets: their address arguments are pointers seccomp cannot read, and they need no
// rule of their own. io_uring (always refused) would otherwise create sockets.
Status RefuseAllButUnixSockets(scmp_filter_ctx ctx) {
  for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
        rc != 0) {
      return LibError("socket", rc);
    }
  }
  return {};
}

// Proxied: IP sockets act in the command's own network namespace, where only the proxy
// listens; netlink lets resolvers and `ip` see that namespace. Every other family is
// refused: some are not confined by a network namespace at all (AF_VSOCK reaches the
// hypervisor, AF_BLUETOOTH the host's radios).
// One rule per refused family (a rule compares an argument once), and one for every
// family past the last this kernel's headers know.
Status RefuseUnconfinedFamilies(scmp_filter_ctx ctx) {
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    for (int family = 0; family < AF_MAX; ++family) {
      if (family == AF_UNIX || family == AF_INET || family == AF_INET6 || family == AF_NETLINK) {
        continue;
      }
      if (int rc = seccomp_rule_add(ctx, eperm, nr, 1,
                                    SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(family)));
          rc != 0) {
        return LibError("socket", rc);
      }
    }
    if (int rc = seccomp_rule_add(ctx, eperm, nr, 1,
                                  SCMP_A0(SCMP_CMP_GE, static_cast<scmp_datum_t>(AF_MAX)));
        rc != 0) {
      return LibError("socket", rc);
    }
  }
  return {};
}

Result<std::vector<sock_filter>> CompileProgram(const Policy& policy) {
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return MakeError("sandbox: seccomp_init failed");
  // Only the native ABI: i386 (socketcall hides its arguments) and x32 would get around the
  // argument checks below, so they end the process.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
      rc != 0) {
    return LibError("bad-arch action", rc);
  }
  if (Status s = RefuseAlwaysRefused(ctx.get()); !s.ok()) return s.error();
  if (Status s = RefuseTerminalTakeover(ctx.get()); !s.ok()) return s.error();
  if (Status s = RefuseSetIdModes(ctx.get()); !s.ok()) return s.error();
  if (!policy.network_access) {
    Status s = policy.proxy_port == 0 ? RefuseAllButUnixSockets(ctx.get())
                                      : RefuseUnconfinedFamilies(ctx.get());
    if (!s.ok()) return s.error();
  }
  return Export(ctx.get());
}

}  // namespace

bool Install(const sock_fprog* program, int* err) noexcept {
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, program, 0, 0) != 0) {
    *err = errno;
    return false;
  }
  return true;
}

bool InstallWatch(const sock_fprog* program, int* listener, int* err) noexcept {
  long fd =
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, program);
  if (fd < 0) {
    *err = errno;
    return false;
  }
  *listener = static_cast<int>(fd);
  return true;
}

// libseccomp's compilation is most of the user time of preparing a sandbox, and a run
// prepares several (the preflight's probes, then the commands'); the programs depend only on
// the network's mode (off, proxied, all), so each is compiled once per process.
Result<std::vector<sock_filter>> BuildProgram(const Policy& policy) {
  static std::mutex mutex;
  static std::optional<Result<std::vector<sock_filter>>> compiled[3];
  const std::lock_guard<std::mutex> lock(mutex);
  const int variant = policy.network_access ? 1 : policy.proxy_port != 0 ? 2 : 0;
  std::optional<Result<std::vector<sock_filter>>>& slot = compiled[variant];
  if (!slot) slot = CompileProgram(policy);
  return *slot;
}

Result<std::vector<sock_filter>> BuildWatchProgram(WatchSet set) {
  static std::mutex mutex;
  static std::optional<Result<std::vector<sock_filter>>> compiled[2][2];
  const std::lock_guard<std::mutex> lock(mutex);
  std::optional<Result<std::vector<sock_filter>>>& slot = compiled[set.writes][set.network];
  if (!slot) slot = CompileWatchProgram(set);
  return *slot;
}

NetworkCall FindNetworkCall(int nr) {
  static const int kConnect = seccomp_syscall_resolve_name("connect");
  static const int kSendto = seccomp_syscall_resolve_name("sendto");
  static const int kSocket = seccomp_syscall_resolve_name("socket");
  if (nr < 0) return NetworkCall::kNone;
  if (nr == kConnect) return NetworkCall::kConnect;
  if (nr == kSendto) return NetworkCall::kSendto;
  if (nr == kSocket) return NetworkCall::kRawSocket;
  return NetworkCall::kNone;
}

}  // namespace ae::sandbox::seccomp
