// sandbox_probe: one system call (or a short sequence) per subcommand, for the escape suite.
// Prints "ok" and exits 0 when the operation succeeded; prints "denied: <what>: <errno text>
// (errno N)" and exits 1 when the kernel refused it. Never used outside the tests.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <unistd.h>
#include <utime.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int Report(bool ok, const char* what) {
  if (ok) {
    std::printf("ok\n");
    return 0;
  }
  int err = errno;
  std::printf("denied: %s: %s (errno %d)\n", what, std::strerror(err), err);
  return 1;
}

int Family(const std::string& name) {
  if (name == "unix") return AF_UNIX;
  if (name == "inet") return AF_INET;
  if (name == "inet6") return AF_INET6;
  if (name == "packet") return AF_PACKET;
  if (name == "netlink") return AF_NETLINK;
  if (name == "vsock") return AF_VSOCK;
  if (name == "alg") return AF_ALG;
  if (name == "xdp") return 44;
  if (name == "tipc") return AF_TIPC;
  if (name == "can") return AF_CAN;
  if (name == "bluetooth") return AF_BLUETOOTH;
  if (name == "key") return AF_KEY;
  return std::atoi(name.c_str());
}

int Socket(int argc, char** argv) {
  if (argc < 3) return 2;
  std::string family = argv[2];
  std::string kind = argc > 3 ? argv[3] : "stream";
  int type = kind == "dgram" ? SOCK_DGRAM : kind == "raw" ? SOCK_RAW : SOCK_STREAM;
  int proto = 0;
  if (family == "inet" && kind == "raw") proto = IPPROTO_ICMP;
  if (family == "packet") type = SOCK_RAW;
  if (family == "netlink") type = SOCK_RAW;
  if (family == "highbits") {
    // AF_INET with garbage in the upper half: the kernel reads an int.
    long fd = ::syscall(SYS_socket, 0x100000000L | AF_INET, SOCK_STREAM, 0);
    return Report(fd >= 0, "socket(AF_INET | 1<<32)");
  }
  int fd = ::socket(Family(family), type, proto);
  return Report(fd >= 0, "socket");
}

int Socketpair(const char* family) {
  int sv[2];
  return Report(::socketpair(Family(family), SOCK_STREAM, 0, sv) == 0, "socketpair");
}

int ConnectTcp(const char* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Report(false, "socket");
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(port)));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return Report(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "connect");
}

// A Unix-socket server and client in one process: bind a path (or an abstract name starting
// with '@'), listen, connect, exchange a byte.
int UnixEcho(const char* where) {
  int server = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (server < 0) return Report(false, "socket(AF_UNIX)");
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  socklen_t len;
  if (where[0] == '@') {
    std::strncpy(addr.sun_path + 1, where + 1, sizeof addr.sun_path - 2);
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + std::strlen(where + 1));
  } else {
    ::unlink(where);
    std::strncpy(addr.sun_path, where, sizeof addr.sun_path - 1);
    len = sizeof addr;
  }
  if (::bind(server, reinterpret_cast<sockaddr*>(&addr), len) != 0) return Report(false, "bind");
  if (::listen(server, 1) != 0) return Report(false, "listen");
  int client = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (::connect(client, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return Report(false, "connect");
  }
  int conn = ::accept(server, nullptr, nullptr);
  if (conn < 0) return Report(false, "accept");
  char c = 'x';
  if (::send(client, &c, 1, 0) != 1 || ::recv(conn, &c, 1, 0) != 1) return Report(false, "send");
  return Report(true, "unix echo");
}

// Connects to an abstract Unix socket someone else (outside the sandbox) bound.
int UnixConnect(const char* where) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path + 1, where + 1, sizeof addr.sun_path - 2);
  socklen_t len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + std::strlen(where + 1));
  return Report(::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0, "connect");
}

// Host Unix sockets: connect to a pathname socket and send a byte.
int UnixConnectPath(const char* path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return Report(false, "socket(AF_UNIX)");
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Report(false, "connect");
  }
  char c = 'x';
  return Report(::send(fd, &c, 1, MSG_NOSIGNAL) == 1, "send");
}

// A server of the command's own: listens on `path` (replacing what is there), prints
// "listening", serves one connection (one byte) and exits.
int UnixListen(const char* path) {
  int server = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (server < 0) return Report(false, "socket(AF_UNIX)");
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
  ::unlink(path);
  if (::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Report(false, "bind");
  }
  if (::listen(server, 1) != 0) return Report(false, "listen");
  std::printf("listening\n");
  std::fflush(stdout);
  int conn = ::accept(server, nullptr, nullptr);
  char c = 0;
  if (conn < 0 || ::recv(conn, &c, 1, 0) != 1) return Report(false, "accept");
  return Report(true, "serve");
}

// A server process and a client process of the command's own, on `path`.
int UnixServeAndConnect(const char* path) {
  int ready[2];
  if (::pipe(ready) != 0) return Report(false, "pipe");
  pid_t server = ::fork();
  if (server == 0) {
    ::dup2(ready[1], 1);
    ::_exit(UnixListen(path));
  }
  ::close(ready[1]);
  char buf[16];
  if (::read(ready[0], buf, sizeof buf) <= 0) return Report(false, "server start");
  int client = UnixConnectPath(path);
  int status = 0;
  ::waitpid(server, &status, 0);
  errno = ECONNREFUSED;
  return client == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : Report(false, "serve");
}

int WriteFile(const char* path, int flags) {
  int fd = ::open(path, O_WRONLY | flags, 0644);
  if (fd < 0) return Report(false, "open");
  return Report(::write(fd, "pwned\n", 6) == 6, "write");
}

int ProcFdReopen(const char* path) {
  int fd = ::open(path, O_RDONLY);
  if (fd < 0) return Report(false, "open O_RDONLY");
  std::string proc = "/proc/self/fd/" + std::to_string(fd);
  return WriteFile(proc.c_str(), O_TRUNC);
}

int Ptrace(const char* pid_text) {
  pid_t pid = std::atoi(pid_text);
  if (::ptrace(PTRACE_ATTACH, pid, nullptr, nullptr) != 0) return Report(false, "ptrace");
  ::waitpid(pid, nullptr, __WALL);
  ::ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
  return Report(true, "ptrace");
}

int PtraceChild() {
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  long rc = ::ptrace(PTRACE_ATTACH, child, nullptr, nullptr);
  int err = errno;
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  errno = err;
  return Report(rc == 0, "ptrace(own child)");
}

int VmRead(const char* pid_text) {
  char buf[16];
  char remote_buf[16];
  iovec local = {buf, sizeof buf};
  iovec remote = {remote_buf, sizeof remote_buf};  // any address: only EPERM matters
  ssize_t n = ::process_vm_readv(std::atoi(pid_text), &local, 1, &remote, 1, 0);
  // EFAULT means the call was allowed and only the address was wrong.
  return Report(n >= 0 || errno == EFAULT, "process_vm_readv");
}

int IoUring() {
  io_uring_params params = {};
  long fd = ::syscall(SYS_io_uring_setup, 4, &params);
  return Report(fd >= 0, "io_uring_setup");
}

int X32Syscall() {
  long rc = ::syscall(0x40000000L | SYS_getpid);  // killed by SIGSYS under the filter
  return Report(rc >= 0, "x32 getpid");
}

int Int80() {
  long rc;
  // i386 getpid (20) through the 32-bit entry point; killed by SIGSYS under the filter.
  asm volatile("int $0x80" : "=a"(rc) : "a"(20L) : "memory");
  if (rc < 0) errno = static_cast<int>(-rc);
  return Report(rc >= 0, "int 0x80 getpid");
}

int Tiocsti() {
  char c = 'x';
  int rc = ::ioctl(0, TIOCSTI, &c);
  // On a non-terminal the unfiltered answer is ENOTTY; only EPERM shows the filter.
  return Report(rc == 0 || errno != EPERM, "ioctl(TIOCSTI)");
}

int FinitModule() {
  long rc = ::syscall(SYS_finit_module, -1, "", 0);
  return Report(rc == 0 || errno != EPERM, "finit_module");  // EBADF: the call went through
}

int Sethostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return Report(::sethostname(name, std::strlen(name)) == 0, "sethostname");
}

int Setns(const char* path) {
  int fd = ::open(path, O_RDONLY);
  if (fd < 0) return Report(false, "open");
  return Report(::setns(fd, 0) == 0, "setns");
}

int UnshareMount(const char* target) {
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0 && ::unshare(CLONE_NEWNS) != 0) {
    return Report(false, "unshare");
  }
  if (::mount("none", target, "tmpfs", 0, nullptr) != 0) return Report(false, "mount");
  return Report(true, "mount");
}

// Steals descriptor 0 of another process through a pidfd.
int PidfdGetfd(const char* pid_text) {
  long pidfd = ::syscall(SYS_pidfd_open, std::atoi(pid_text), 0);
  if (pidfd < 0) return Report(false, "pidfd_open");
  long fd = ::syscall(SYS_pidfd_getfd, pidfd, 0, 0);
  return Report(fd >= 0, "pidfd_getfd");
}

// Gives an already-open outside file a new name in the workspace, then writes through it.
int LinkatFd(const char* from, const char* to, bool via_proc) {
  int fd = ::open(from, O_RDONLY);
  if (fd < 0) return Report(false, "open O_RDONLY");
  int rc;
  if (via_proc) {
    std::string proc = "/proc/self/fd/" + std::to_string(fd);
    rc = ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, to, AT_SYMLINK_FOLLOW);
  } else {
    rc = ::linkat(fd, "", AT_FDCWD, to, AT_EMPTY_PATH);
  }
  if (rc != 0) return Report(false, "linkat");
  return WriteFile(to, O_APPEND);
}

int Exchange(const char* a, const char* b) {
  return Report(::syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0,
                "renameat2(RENAME_EXCHANGE)");
}

// Sets the no-dump attribute through an fd opened read-only: an ioctl, not a write.
int Chattr(const char* path) {
  int fd = ::open(path, O_RDONLY);
  if (fd < 0) return Report(false, "open O_RDONLY");
  int flags = 0;
  if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) return Report(false, "FS_IOC_GETFLAGS");
  flags |= FS_NODUMP_FL;
  return Report(::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0, "FS_IOC_SETFLAGS");
}

int AddKey() {
  long id =
      ::syscall(SYS_add_key, "user", "agentexec-sandbox-probe", "x", 1, KEY_SPEC_SESSION_KEYRING);
  return Report(id >= 0, "add_key");
}

// Starts a process meant to outlive the probe: `sleep MARKER` (the test finds it by that
// argument in /proc), detached by `mode`: setsid, setpgid, doublefork (setsid + fork, parent
// exits) or plain (a background child in our group). Its stdio is /dev/null so it holds no
// pipe of the caller's. With `wait` the probe itself then blocks, so the test can end it from
// outside (timeout, SIGTERM, SIGKILL of agentexec).
int Daemon(const std::string& mode, const char* marker, bool wait) {
  // "started" is printed only once the daemon has left the group and exec'd: the pipe's write
  // end is close-on-exec, so EOF means every copy is gone. Otherwise a group kill at command
  // end could reach a daemon that had not yet called setsid, and the test would see nothing.
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return Report(false, "pipe2");
  pid_t pid = ::fork();
  if (pid < 0) return Report(false, "fork");
  if (pid == 0) {
    ::close(ready[0]);
    if (mode == "setsid" || mode == "doublefork") ::setsid();
    if (mode == "setpgid") ::setpgid(0, 0);
    if (mode == "doublefork" && ::fork() != 0) ::_exit(0);
    int null_fd = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(null_fd, fd);
    ::execl("/bin/sleep", "sleep", marker, nullptr);
    ::_exit(127);
  }
  ::close(ready[1]);
  char byte;
  ssize_t n;
  do {
    n = ::read(ready[0], &byte, 1);
  } while (n > 0 || (n < 0 && errno == EINTR));
  ::close(ready[0]);
  if (mode == "doublefork") ::waitpid(pid, nullptr, 0);
  std::printf("started\n");
  std::fflush(stdout);
  while (wait) ::pause();
  return 0;
}

// Through an inherited descriptor: the same mode/owner again (the call's success is the
// escape; nothing visible need change), times set to now, a user xattr, a write.
int FdOp(const std::string& op, int fd) {
  struct stat st = {};
  if (::fstat(fd, &st) != 0) return Report(false, "fstat");
  // A pipe the sandbox put in the file's place: its metadata is nobody's.
  if (S_ISFIFO(st.st_mode)) {
    errno = EBADF;
    return Report(false, "fstat (not the file it was opened on)");
  }
  if (op == "fchmod") return Report(::fchmod(fd, st.st_mode & 07777) == 0, "fchmod");
  if (op == "fchown") return Report(::fchown(fd, st.st_uid, st.st_gid) == 0, "fchown");
  if (op == "futimens") return Report(::futimens(fd, nullptr) == 0, "futimens");
  if (op == "fsetxattr") {
    return Report(::fsetxattr(fd, "user.pwned", "1", 1, 0) == 0, "fsetxattr");
  }
  return Report(::write(fd, "pwned\n", 6) == 6, "write");
}

// "ok" (an escape) when the probe holds any descriptor besides 0, 1 and 2.
int OnlyStdio() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return Report(false, "opendir /proc/self/fd");
  std::string extra;
  while (dirent* entry = ::readdir(dir)) {
    int fd = std::atoi(entry->d_name);
    if (entry->d_name[0] == '.' || fd < 3 || fd == ::dirfd(dir)) continue;
    extra += std::string(" ") + entry->d_name;
  }
  ::closedir(dir);
  if (!extra.empty()) {
    std::printf("ok: descriptors beyond 0-2:%s\n", extra.c_str());
    return 0;
  }
  errno = EBADF;
  return Report(false, "descriptors beyond 0-2");
}

// The terminal: make our group its foreground group (then we read what the user types), or
// push a character into its input. `dev` is "/dev/tty" or "stdin".
int Terminal(const std::string& op, const std::string& dev) {
  ::signal(SIGTTOU, SIG_IGN);
  int fd = dev == "stdin" ? 0 : ::open(dev.c_str(), O_RDWR | O_NOCTTY);
  if (fd < 0) return Report(false, "open the terminal");
  if (op == "tcsetpgrp") return Report(::tcsetpgrp(fd, ::getpgrp()) == 0, "tcsetpgrp");
  char c = '\n';
  return Report(::ioctl(fd, TIOCSTI, &c) == 0, "ioctl(TIOCSTI)");
}

// Set-id bits and file capabilities, checked on the result (a kernel that silently drops the
// bit is not an escape).
int SetId(const std::string& op, const char* path) {
  struct stat st = {};
  if (op == "chmod-suid" || op == "chmod-sgid") {
    mode_t mode = op == "chmod-suid" ? 04755 : 02755;
    if (::chmod(path, mode) != 0) return Report(false, "chmod");
    ::stat(path, &st);
    errno = EPERM;
    return Report((st.st_mode & mode & 06000) != 0, "chmod (bit dropped)");
  }
  if (op == "create-suid") {
    int fd = ::open(path, O_CREAT | O_EXCL | O_WRONLY, 04755);
    if (fd < 0) return Report(false, "open O_CREAT 04755");
    ::fstat(fd, &st);
    errno = EPERM;
    return Report((st.st_mode & S_ISUID) != 0, "open O_CREAT 04755 (bit dropped)");
  }
  // setcap cap_net_raw+ep: a v2 security.capability.
  struct {
    uint32_t magic_etc;
    struct {
      uint32_t permitted, inheritable;
    } data[2];
  } cap = {0x02000000u | 1u, {{1u << 13, 0}, {0, 0}}};
  return Report(::setxattr(path, "security.capability", &cap, sizeof cap, 0) == 0,
                "setxattr security.capability");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sandbox_probe SUBCOMMAND [ARGS]\n");
    return 2;
  }
  std::string cmd = argv[1];
  const char* a = argc > 2 ? argv[2] : "";
  const char* b = argc > 3 ? argv[3] : "";
  if (cmd == "write") return WriteFile(a, O_TRUNC);
  if (cmd == "create") return WriteFile(a, O_CREAT | O_EXCL);
  if (cmd == "append") return WriteFile(a, O_APPEND);
  if (cmd == "write-fd") return Report(::write(std::atoi(a), "pwned\n", 6) == 6, "write(fd)");
  if (cmd == "open-rw") return Report(::open(a, O_RDWR) >= 0, "open O_RDWR");
  if (cmd == "open-ro") return Report(::open(a, O_RDONLY) >= 0, "open O_RDONLY");
  if (cmd == "mkdir") return Report(::mkdir(a, 0755) == 0, "mkdir");
  if (cmd == "rmdir") return Report(::rmdir(a) == 0, "rmdir");
  if (cmd == "unlink") return Report(::unlink(a) == 0, "unlink");
  if (cmd == "rename") return Report(::rename(a, b) == 0, "rename");
  if (cmd == "link") return Report(::link(a, b) == 0, "link");
  if (cmd == "symlink") return Report(::symlink(a, b) == 0, "symlink");
  if (cmd == "chmod") return Report(::chmod(a, 0777) == 0, "chmod");
  if (cmd == "chown") return Report(::chown(a, 12345, 12345) == 0, "chown");
  if (cmd == "utime") return Report(::utime(a, nullptr) == 0, "utime");
  if (cmd == "setxattr") return Report(::setxattr(a, "user.pwned", "1", 1, 0) == 0, "setxattr");
  if (cmd == "truncate") return Report(::truncate(a, 0) == 0, "truncate");
  if (cmd == "mknod") return Report(::mknod(a, S_IFCHR | 0666, makedev(1, 3)) == 0, "mknod");
  if (cmd == "mkfifo") return Report(::mkfifo(a, 0644) == 0, "mkfifo");
  if (cmd == "mount-tmpfs") return Report(::mount("none", a, "tmpfs", 0, nullptr) == 0, "mount");
  if (cmd == "remount-rw") {
    return Report(::mount(nullptr, a, nullptr, MS_REMOUNT | MS_BIND, nullptr) == 0, "remount");
  }
  if (cmd == "umount") return Report(::umount2(a, MNT_DETACH) == 0, "umount");
  if (cmd == "unshare-mount") return UnshareMount(a);
  if (cmd == "proc-fd-reopen") return ProcFdReopen(a);
  if (cmd == "socket") return Socket(argc, argv);
  if (cmd == "socketpair") return Socketpair(a);
  if (cmd == "connect-tcp") return ConnectTcp(a);
  if (cmd == "unix-echo") return UnixEcho(a);
  if (cmd == "unix-connect") return UnixConnect(a);
  if (cmd == "unix-connect-path") return UnixConnectPath(a);
  if (cmd == "unix-listen") return UnixListen(a);
  if (cmd == "unix-serve-connect") return UnixServeAndConnect(a);
  if (cmd == "ptrace") return Ptrace(a);
  if (cmd == "ptrace-child") return PtraceChild();
  if (cmd == "vm-read") return VmRead(a);
  if (cmd == "kill") return Report(::kill(std::atoi(a), SIGKILL) == 0, "kill");
  if (cmd == "io-uring") return IoUring();
  if (cmd == "x32") return X32Syscall();
  if (cmd == "int80") return Int80();
  if (cmd == "tiocsti") return Tiocsti();
  if (cmd == "finit-module") return FinitModule();
  if (cmd == "sethostname") return Sethostname();
  if (cmd == "setns") return Setns(a);
  if (cmd == "pidfd-getfd") return PidfdGetfd(a);
  if (cmd == "linkat-fd") return LinkatFd(a, b, false);
  if (cmd == "linkat-proc") return LinkatFd(a, b, true);
  if (cmd == "exchange") return Exchange(a, b);
  if (cmd == "chattr") return Chattr(a);
  if (cmd == "add-key") return AddKey();
  if (cmd == "daemon") return Daemon(a, b, argc > 4 && std::string(argv[4]) == "wait");
  if (cmd.rfind("fd-", 0) == 0) return FdOp(cmd.substr(3), std::atoi(a));
  if (cmd == "only-stdio") return OnlyStdio();
  if (cmd == "tty-tcsetpgrp") return Terminal("tcsetpgrp", a);
  if (cmd == "tty-tiocsti") return Terminal("tiocsti", a);
  if (cmd == "chmod-suid" || cmd == "chmod-sgid" || cmd == "create-suid" || cmd == "setcap") {
    return SetId(cmd, a);
  }
  std::fprintf(stderr, "sandbox_probe: unknown subcommand %s\n", cmd.c_str());
  return 2;
}
