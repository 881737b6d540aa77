// `agentexec sandbox`: confine this very process (still single-threaded here) with the
// prepared sandbox and execvp the command. With a PID namespace this process stays behind as
// the supervisor (sandbox/containment.h) and exits as the command does; without one, the
// command replaces it (unless it leads a process group, when setsid needs a fork).
#include "runner/sandbox_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/child.h"
#include "base/fd.h"
#include "base/result.h"
#include "base/sanitizer.h"
#include "base/write_all.h"
#include "cli/exit_code.h"
#include "net/proxy.h"
#include "runner/load_run.h"
#include "sandbox/containment.h"
#include "sandbox/paths.h"
#include "sandbox/placeholders.h"
#include "sandbox/policy.h"
#include "sandbox/preflight.h"
#include "sandbox/prepared.h"
#include "sandbox/private_tmp.h"

namespace ae {
namespace {

void PrintLine(const std::string& line) {
  std::fputs(line.c_str(), stderr);
  std::fputc('\n', stderr);
}

// Descriptors 0-2 the caller opened on a file (`< file`, `> log`) were opened before the
// mount namespace: they refer to the host's writable mount, and fchmod, fchown, futimens or
// fsetxattr through them (or through /proc/self/fd/N) would change that file wherever it is,
// since Landlock does not cover metadata. So with the mount namespace a descriptor on a file
// the policy does not let the command write never reaches it as given:
//  - read-only ones (and stdin, and character devices such as /dev/null) are opened again by
//    the command's process, by the same path on the namespace's tree, once confined, as the
//    spawner opens its /dev/null; the (dev, ino) must match, and a regular file keeps its
//    offset and status flags. It stays seekable (unlike a pipe), and nothing is read ahead: a
//    `while read f; do agentexec sandbox ...; done < list` loop is not emptied by a command
//    that leaves stdin alone. (The caller's offset does not move with the command's reads.)
//  - write descriptors (stdout, stderr to a log outside the roots) cannot be opened for writing
//    there: they become pipes this process drains into the caller's descriptor, after forking
//    the process that confines itself. The caller's file keeps its shared offset and O_APPEND,
//    and this process exits only after the last byte is written.
// Pipes, sockets and terminals are passed as they are (a terminal reopened inside would be a
// different one, or hidden by the private devpts).
struct StdioPlan {
  struct Reopen {
    int fd = -1;
    std::string path;
    int flags = 0;  // access mode and status flags for the new open
    dev_t dev = 0;
    ino_t ino = 0;
    off_t offset = -1;  // regular files: where the caller's descriptor was
  };
  std::vector<Reopen> reopen;
  std::vector<int> pump;
};

StdioPlan PlanStdio(const sandbox::Policy& policy) {
  StdioPlan plan;
  for (int fd = 0; fd <= 2; ++fd) {
    struct stat st;
    if (::fstat(fd, &st) != 0 || ::isatty(fd)) continue;
    char link[4096];
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(proc.c_str(), link, sizeof link - 1);
    if (n <= 0 || link[0] != '/') continue;  // pipe:[...], socket:[...], anon_inode:...
    const std::string path(link, static_cast<size_t>(n));
    if (policy.CanWrite(path)) continue;  // the command may change that file anyway
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) continue;
    const int access = flags & O_ACCMODE;
    if (fd >= 1 && access != O_RDONLY && !S_ISCHR(st.st_mode)) {
      plan.pump.push_back(fd);
      continue;
    }
    StdioPlan::Reopen r;
    r.fd = fd;
    r.path = path;
    r.flags = (S_ISCHR(st.st_mode) ? access : O_RDONLY) | (flags & (O_APPEND | O_NONBLOCK));
    r.dev = st.st_dev;
    r.ino = st.st_ino;
    if (S_ISREG(st.st_mode)) r.offset = ::lseek(fd, 0, SEEK_CUR);
    plan.reopen.push_back(std::move(r));
  }
  return plan;
}

const char* StdioName(int fd) {
  return fd == 0 ? "stdin" : fd == 1 ? "stdout" : "stderr";
}

// In the command's process, confined: the planned descriptors opened again by name.
bool ReopenStdio(const StdioPlan& plan) {
  for (const StdioPlan::Reopen& r : plan.reopen) {
    // O_NONBLOCK for the open only: a FIFO must not wait for a writer here.
    Fd fd(::open(r.path.c_str(), r.flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    struct stat st;
    const char* why = nullptr;
    int err = 0;
    if (!fd) {
      err = errno;
    } else if (::fstat(fd.get(), &st) != 0) {
      err = errno;
    } else if (st.st_dev != r.dev || st.st_ino != r.ino) {
      why = "it is another file there";
    } else if ((r.offset >= 0 && ::lseek(fd.get(), r.offset, SEEK_SET) < 0) ||
               ::fcntl(fd.get(), F_SETFL, r.flags & (O_APPEND | O_NONBLOCK)) != 0 ||
               ::dup2(fd.get(), r.fd) < 0) {
      err = errno;
    }
    if (why != nullptr || err != 0) {
      PrintLine(fmt::format(
          "agentexec sandbox: {} ({}) cannot be opened again inside the sandbox: {}; pass it "
          "through a pipe instead",
          StdioName(r.fd), r.path, why != nullptr ? why : std::strerror(err)));
      return false;
    }
  }
  return true;
}

// fork(2) for the process that goes on to run the command: in the child (0) it dies with this
// process, since killing agentexec (the pid the caller knows) ends the command's whole tree.
pid_t ForkTiedToUs() {
  const pid_t parent = ::getpid();
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child == 0 && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)) {
    ::_exit(126);
  }
  return child;
}

// Forks; the child returns (to confine itself and run the command) with a pipe on each
// descriptor of `pump`; this process copies what arrives to the caller's descriptors until the
// child has exited and its pipes are drained, then exits as the child did. Returns false when
// the pipes or the fork cannot be had.
bool ForkAndPump(const std::vector<int>& pump) {
  struct Pipe {
    int target;
    Fd read_end, write_end;
    std::vector<int> also;  // more of 0-2 on the same file (`> log 2>&1`): one pipe keeps order
  };
  std::vector<Pipe> pipes;
  for (int fd : pump) {
    struct stat st, other;
    bool shared = false;
    for (Pipe& p : pipes) {
      if (::fstat(fd, &st) == 0 && ::fstat(p.target, &other) == 0 && st.st_dev == other.st_dev &&
          st.st_ino == other.st_ino) {
        p.also.push_back(fd);
        shared = true;
        break;
      }
    }
    if (shared) continue;
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return false;
    pipes.push_back({fd, Fd(p[0]), Fd(p[1]), {}});
  }
  const pid_t child = ForkTiedToUs();
  if (child < 0) return false;
  if (child == 0) {
    for (Pipe& p : pipes) {
      if (::dup2(p.write_end.get(), p.target) < 0) ::_exit(126);
      for (int fd : p.also) {
        if (::dup2(p.write_end.get(), fd) < 0) ::_exit(126);
      }
      p.read_end.reset();
    }
    return true;
  }
  std::vector<pollfd> polls;
  for (Pipe& p : pipes) {
    p.write_end.reset();
    ::fcntl(p.read_end.get(), F_SETFL, O_NONBLOCK);
  }
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
  bool exited = false;
  char buf[65536];
  for (;;) {
    polls.clear();
    for (Pipe& p : pipes) {
      if (p.read_end) polls.push_back({p.read_end.get(), POLLIN, 0});
    }
    if (polls.empty()) break;
    if (!exited && pidfd) polls.push_back({pidfd.get(), POLLIN, 0});
    if (!exited && ::poll(polls.data(), polls.size(), -1) < 0 && errno != EINTR) break;
    if (!exited && pidfd && (polls.back().revents & POLLIN) != 0) exited = true;
    // Once the child is gone, what is left is drained without waiting (without a PID
    // namespace a daemon of the command may hold a pipe open: its later output is lost).
    for (Pipe& p : pipes) {
      if (!p.read_end) continue;
      ssize_t n = ::read(p.read_end.get(), buf, sizeof buf);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (exited) p.read_end.reset();
        continue;
      }
      // EOF, or the caller's file refuses the bytes (full disk, no reader): the command's
      // next write to that descriptor fails (EPIPE) as it would have on the file.
      if (n <= 0 || !WriteAll(p.target, std::string_view(buf, static_cast<size_t>(n))).ok()) {
        p.read_end.reset();
      }
    }
  }
  sandbox::FollowChild(child);
}

// The run's own /tmp outlives the command, which replaces the process that confines itself:
// so this process forks first; the child goes on to confine itself and run the command, and
// this one waits for it, passing on the signals a caller sends, removes the directory, and
// ends as the child did. Returns true in the child.
constexpr int kPassedOn[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// With a network allow-list this process also serves the command's proxy: the child's network
// namespace sends its listener over `*proxy_fd` (the child's end, set in the child; -1 in the
// parent), and each refusal's line goes to stderr once the command has ended.
bool ForkToRemoveAfter(sandbox::PrivateTmp& tmp, sandbox::Placeholders& placeholders,
                       net::Proxy* proxy, int* proxy_fd) {
  Fd proxy_parent, proxy_child;
  if (proxy != nullptr && !sandbox::MakeListenerChannel(&proxy_parent, &proxy_child).ok()) {
    return false;
  }
  sigset_t passed, old;
  ::sigemptyset(&passed);
  for (int sig : kPassedOn) ::sigaddset(&passed, sig);
  if (::sigprocmask(SIG_BLOCK, &passed, &old) != 0) return false;
  const pid_t child = ForkTiedToUs();
  if (child < 0) return false;
  if (child == 0) {
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    tmp.Release();  // the parent removes them
    placeholders.Release();
    *proxy_fd = proxy_child.release();
    return true;
  }
  proxy_child.reset();
  Fd signals(::signalfd(-1, &passed, SFD_CLOEXEC));
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
  std::unique_ptr<net::Proxy::Lease> lease;
  while (signals && pidfd) {
    pollfd polls[3] = {
        {pidfd.get(), POLLIN, 0}, {signals.get(), POLLIN, 0}, {proxy_parent.get(), POLLIN, 0}};
    if (::poll(polls, proxy_parent ? 3 : 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if ((polls[0].revents & POLLIN) != 0) break;
    if (proxy_parent && polls[2].revents != 0) {
      if (Fd listener = sandbox::ReceiveListener(proxy_parent.get())) {
        lease = proxy->Attach(std::move(listener));
      }
      proxy_parent.reset();  // one listener, or none: the command then has no network
    }
    signalfd_siginfo info{};
    if ((polls[1].revents & POLLIN) != 0 &&
        ::read(signals.get(), &info, sizeof info) == sizeof info) {
      ::kill(child, static_cast<int>(info.ssi_signo));
    }
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (lease) {
    for (const net::ConnectionRecord& r : lease->Finish()) {
      if (!r.hint.empty()) PrintLine(r.hint);
    }
  }
  placeholders.RemoveAll();
  if (std::string left = tmp.Remove(); !left.empty()) PrintLine("warning: " + left);
  std::fflush(nullptr);
  if (WIFSIGNALED(status)) {
    ::signal(WTERMSIG(status), SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    ::raise(WTERMSIG(status));
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 126);
}

}  // namespace

int PrintWritableRoots(const CliArgs& args) {
  const Environment env = Environment::FromProcess();
  Result<LoadedLayers> layers = LoadLayers(LayerRequestFrom(args), env);
  if (!layers.ok()) return FailWith(ExitCode::kUsage, layers.message());
  sandbox::Settings settings =
      SandboxSettingsFrom(layers->config, layers->cwd, env.cwd, args.add_dirs);
  if (sandbox::WantsPrivateTmp(settings)) {
    // Neither the host's /tmp nor $TMPDIR is a root of such a run.
    settings.exclude_slash_tmp = true;
    settings.exclude_tmpdir_env_var = true;
  }
  Result<sandbox::Policy> policy = sandbox::BuildPolicyWithoutNested(settings, layers->cwd);
  if (!policy.ok()) return FailWith(ExitCode::kSandboxUnavailable, policy.message());
  std::vector<std::string> roots = policy->writable_roots;
  if (policy->mode == sandbox::Mode::kWorkspaceWrite) {
    // A configured root that does not exist yet is skipped by this run, but not by one that
    // starts once something made it: a caller keeping its files out of reach counts it too.
    std::vector<std::string> configured = settings.writable_roots;
    configured.insert(configured.end(), settings.add_dirs.begin(), settings.add_dirs.end());
    for (const std::string& given : configured) {
      std::string root = sandbox::ResolvePath(sandbox::JoinPath(layers->cwd, given));
      if (std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
    }
  }
  std::string out;
  if (policy->unrestricted()) out = "/\n";
  for (const std::string& root : roots) out += root + "\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

namespace {

// A step that ended the command: the exit status to return (the message already printed).
using Ended = std::optional<int>;

Ended Unavailable(const std::string& message) {
  PrintLine(message);
  return ToInt(ExitCode::kSandboxUnavailable);
}

// The kernel's report and the search for nested repositories, run side by side (both mostly
// wait on the kernel; the command starts only once both are complete), then the placeholders
// and the prepared sandbox. `report` is the kernel's.
Result<sandbox::PreparedPtr> PrepareSandbox(sandbox::Policy& policy,
                                            sandbox::Placeholders& placeholders,
                                            sandbox::PreflightReport& report) {
  const CancelToken never_cancelled;
  sandbox::NestedScan nested(policy, never_cancelled);
  nested.Start();
  Result<sandbox::PreflightReport> preflight = sandbox::Preflight(policy);
  if (!preflight.ok()) return preflight.error();
  report = std::move(*preflight);
  if (Status found = nested.Finish(&policy); !found.ok()) return found.error();
  std::vector<std::string> warnings;
  placeholders.Make(&policy, &warnings);
  for (const std::string& warning : warnings) PrintLine("warning: " + warning);
  for (const std::string& warning : report.warnings) PrintLine(warning);
  sandbox::PrepareOptions options;
  options.mount_namespace = report.mount_namespace;
  options.pid_namespace = report.pid_namespace;
  return sandbox::Prepare(policy, options);
}

// The allow-list's proxy (served by the process ForkToRemoveAfter leaves behind), with the
// variables that point the command's clients at it; none without an allow-list.
Result<std::unique_ptr<net::Proxy>> StartProxy(const sandbox::Policy& policy, net::Policy network) {
  if (policy.proxy_port == 0) return std::unique_ptr<net::Proxy>();
  std::string local_error;
  std::unique_ptr<net::LocalAddresses> local = net::SystemLocalAddresses(&local_error);
  if (!local_error.empty()) {
    return MakeError("sandbox: network allow-list: cannot list this host's addresses: " +
                     local_error);
  }
  auto proxy =
      std::make_unique<net::Proxy>(std::move(network), net::SystemResolver(), std::move(local));
  for (const std::string& kv : net::ProxyEnvironment(policy.proxy_port)) {
    const size_t eq = kv.find('=');
    ::setenv(kv.substr(0, eq).c_str(), kv.c_str() + eq + 1, 1);
  }
  return proxy;
}

// Confines this process for the command: the sandbox prepared, the helpers forked off (the
// private /tmp and placeholders removed afterwards, the proxy served, the output pumped), the
// descriptors past stdio closed on exec, and the child steps applied here. `proxy` is the
// caller's, as `tmp` and `placeholders` are: nothing of them is destroyed before the exec.
Ended Confine(sandbox::Policy& policy, net::Policy network, sandbox::PrivateTmp& tmp,
              sandbox::Placeholders& placeholders, std::unique_ptr<net::Proxy>& proxy) {
  sandbox::PreflightReport report;
  Result<sandbox::PreparedPtr> prepared = PrepareSandbox(policy, placeholders, report);
  if (!prepared.ok()) return Unavailable(prepared.message());
  if (!policy.network_access) ::setenv("CODEX_SANDBOX_NETWORK_DISABLED", "1", 1);
  if (const std::string tmpdir = sandbox::CommandTmpdir(**prepared); !tmpdir.empty()) {
    ::setenv("TMPDIR", tmpdir.c_str(), 1);
  }
  Result<std::unique_ptr<net::Proxy>> started = StartProxy(policy, std::move(network));
  if (!started.ok()) return Unavailable(started.message());
  proxy = std::move(*started);
  int proxy_fd = -1;
  if (!tmp.path().empty() || !policy.placeholders.empty() || proxy) {
    if (!ForkToRemoveAfter(tmp, placeholders, proxy.get(), &proxy_fd)) {
      return Unavailable(fmt::format("agentexec sandbox: cannot fork: {}", std::strerror(errno)));
    }
  }
  // Without the mount namespace the host's tree is writable to metadata calls anyway (the
  // preflight warned): the caller's descriptors then add nothing.
  StdioPlan stdio;
  if (report.mount_namespace) stdio = PlanStdio(policy);
  if (!stdio.pump.empty() && !ForkAndPump(stdio.pump)) {
    return Unavailable(
        fmt::format("agentexec sandbox: cannot pipe the output: {}", std::strerror(errno)));
  }
  // The command gets 0, 1 and 2 as given and nothing else: an inherited descriptor keeps
  // the powers it was opened with (a file outside the roots, a socket, a directory to
  // fchmod), which no confinement applied afterwards takes away.
  CloseOnExecFrom3();
  const char* step = "";
  int err = 0;
  std::fflush(nullptr);
  CheckLeaksNow();
  if (!sandbox::ApplyInChild(**prepared, proxy_fd, &step, &err)) {
    return Unavailable(fmt::format("agentexec sandbox: {}: {}", step, std::strerror(err)));
  }
  if (!ReopenStdio(stdio)) return ToInt(ExitCode::kCannotExecute);
  return std::nullopt;
}

}  // namespace

int RunSandboxCommand(const CliArgs& args) {
  const Environment env = Environment::FromProcess();
  Result<LoadedLayers> layers = LoadLayers(LayerRequestFrom(args), env);
  if (!layers.ok()) return FailWith(ExitCode::kUsage, layers.message());
  for (const std::string& w : layers->config.warnings) PrintLine("warning: " + w);
  sandbox::Settings settings =
      SandboxSettingsFrom(layers->config, layers->cwd, env.cwd, args.add_dirs);
  std::vector<std::string> command = *args.sandbox_command;
  Result<net::Policy> network = NetworkPolicyFrom(layers->config, args.allow_hosts, &settings);
  if (!network.ok()) return FailWith(ExitCode::kUsage, network.message());
  sandbox::PrivateTmp tmp;
  sandbox::Placeholders placeholders;
  std::unique_ptr<net::Proxy> proxy;
  if (sandbox::WantsPrivateTmp(settings)) {
    Result<sandbox::PrivateTmp> made = sandbox::PrivateTmp::Create();
    if (!made.ok()) return *Unavailable(made.message());
    tmp = std::move(*made);
    settings.private_tmp = tmp.path();
  }
  Result<sandbox::Policy> policy = sandbox::BuildPolicyWithoutNested(settings, layers->cwd);
  if (!policy.ok()) return *Unavailable(policy.message());
  if (!policy->unrestricted()) {
    if (Ended ended = Confine(*policy, std::move(*network), tmp, placeholders, proxy)) {
      return *ended;
    }
  }
  std::vector<char*> argv;
  for (std::string& arg : command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(argv[0], argv.data());
  const int err = errno;
  PrintLine(fmt::format("agentexec sandbox: {}: {}", command.front(), std::strerror(err)));
  return ToInt(err == ENOENT ? ExitCode::kCommandNotFound : ExitCode::kCannotExecute);
}

}  // namespace ae
