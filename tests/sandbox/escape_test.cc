// The escape suite: real commands under `agentexec sandbox`, each trying one way out.
// An attempt escapes when the probe reports success or when anything it targeted changed
// (files outside the roots, .git, .agentexec, the sibling process, the loopback listener).
// Runs in three configurations: the full sandbox; Landlock + seccomp alone (as on hosts that
// refuse namespaces); and an unprivileged user (user namespace path).
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "sandbox/landlock.h"
#include "test_util.h"

namespace ae::sandbox {
namespace {

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
};

// kNone runs the harmless file and socket attempts under danger-full-access: there they must
// succeed, which shows the suite can see an escape at all.
enum class Config { kFull, kLandlockSeccompOnly, kUnprivileged, kNone };

bool HarmlessUnconfined(const Attempt& attempt) {
  static const std::set<std::string> kSafe = {"write",  "append", "create", "mkdir",      "unlink",
                                              "rename", "link",   "chmod",  "connect-tcp"};
  // Families this kernel may not have at all are left out: there they fail either way.
  static const std::set<std::string> kFamilies = {"inet", "inet6", "packet", "netlink", "highbits"};
  // Not those with their own options: moving the workspace away would break the fixture.
  if (attempt.mode != "workspace-write" || !attempt.extra.empty()) return false;
  if (attempt.args[0] == "socket") return kFamilies.count(attempt.args[1]) != 0;
  return kSafe.count(attempt.args[0]) != 0;
}

class EscapeSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    if (landlock::Abi() < 1) {
      GTEST_SKIP() << "Landlock is not available on this kernel (" << std::strerror(errno)
                   << "): the sandbox refuses to run, see the preflight tests";
    }
    char* real = ::realpath(dir_.path().c_str(), nullptr);
    base_ = real;
    std::free(real);
    ws_ = base_ + "/ws";
    out_ = base_ + "/outside";
    Sh("mkdir -p ws/.agentexec outside/dir && git init -q ws && echo hi > ws/a.txt && "
       "git -C ws add a.txt && git -C ws -c user.email=t@t -c user.name=t commit -qm init && "
       "echo 'model = \"x\"' > ws/.agentexec/config.toml && echo secret > outside/secret && "
       "ln -s ../outside/secret ws/out-link && ln -s ../outside/dir ws/out-dir && "
       "ln -s .git/config ws/git-link && mkdir ws/sep && "
       "git init -q --separate-git-dir=" +
           ws_ + "/store ws/sep",
       base_);
    StartSibling();
    StartListeners();
  }

  void TearDown() override {
    if (sibling_ > 0) {
      ::kill(sibling_, SIGKILL);
      ::waitpid(sibling_, nullptr, 0);
    }
    if (tcp_ >= 0) ::close(tcp_);
    if (abstract_ >= 0) ::close(abstract_);
  }

  void StartSibling() {
    sibling_ = ::fork();
    if (sibling_ == 0) {
      ::execl("/bin/sleep", "sleep", "600", nullptr);  // outlives the slowest run
      ::_exit(127);
    }
  }

  void StartListeners() {
    tcp_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(tcp_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(tcp_, 8), 0);
    socklen_t len = sizeof addr;
    ::getsockname(tcp_, reinterpret_cast<sockaddr*>(&addr), &len);
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
    for (const std::string& top : {out_, ws_ + "/.git", ws_ + "/.agentexec", ws_ + "/store"}) {
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
      move.extra = {"-c", "sandbox_workspace_write.exclude_slash_tmp=false"};
      list.push_back(move);
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
    }
    return list;
  }

  // Runs every attempt that applies to `config`; returns how many ran.
  int RunAll(Config config, int* escapes) {
    int ran_count = 0;
    std::vector<std::pair<std::string, std::string>> env;
    if (config == Config::kLandlockSeccompOnly) {
      env.push_back({"AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1"});
    }
    for (const Attempt& attempt : Attempts()) {
      if (attempt.needs_mounts && config == Config::kLandlockSeccompOnly) continue;
      if (attempt.needs_root && config == Config::kUnprivileged) continue;
      if (config == Config::kNone && !HarmlessUnconfined(attempt)) continue;
      if (landlock::Abi() < attempt.min_abi) {
        std::printf("[ skipped  ] %s: needs Landlock ABI %d\n", attempt.name.c_str(),
                    attempt.min_abi);
        continue;
      }
      std::vector<std::string> argv;
      if (config == Config::kUnprivileged) {
        argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
      }
      for (const char* a : {AGENTEXEC_BIN, "sandbox", "-s"}) argv.push_back(a);
      argv.push_back(config == Config::kNone ? "danger-full-access" : attempt.mode);
      for (const char* a : {"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c",
                            "sandbox_workspace_write.exclude_tmpdir_env_var=true"}) {
        argv.push_back(a);
      }
      argv.insert(argv.end(), attempt.extra.begin(), attempt.extra.end());
      argv.push_back("--");
      argv.push_back(SANDBOX_PROBE);
      argv.insert(argv.end(), attempt.args.begin(), attempt.args.end());

      if (config == Config::kNone) Restore();
      const std::string before = Snapshot();
      Ran ran = RunProcess(argv, attempt.cwd.empty() ? ws_ : attempt.cwd, env);
      ++ran_count;
      std::string why;
      if (ran.exit_code == 0) why = "the probe succeeded";
      if (Snapshot() != before) why += " protected files changed;";
      if (!SiblingAlive()) why += " the sibling died;";
      if (Pending(tcp_)) why += " the loopback listener got a connection;";
      if (Pending(abstract_)) why += " the abstract socket got a connection;";
      if (ran.exit_code == 2 || ran.exit_code == 3) why += " the sandbox did not run the probe;";
      if (!why.empty()) {
        ++*escapes;
        if (config != Config::kNone) {
          ADD_FAILURE() << "ESCAPE: " << attempt.name << ": " << why << "\n" << ran.output;
        }
      } else if (config == Config::kNone) {
        ADD_FAILURE() << "not seen as an escape without a sandbox: " << attempt.name << "\n"
                      << ran.output;
        if (!SiblingAlive()) StartSibling();
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

  ScratchDir dir_;
  std::string base_, ws_, out_;
  pid_t sibling_ = -1;
  int tcp_ = -1, abstract_ = -1;
  int tcp_port_ = 0;
  std::string abstract_name_;
};

TEST_F(EscapeSuite, FullSandboxHasNoEscapes) {
  Ran check = RunProcess({AGENTEXEC_BIN, "sandbox", "-s", "workspace-write", "--", "true"}, ws_);
  ASSERT_EQ(check.exit_code, 0) << check.output;
  if (check.output.find("could not create a mount namespace") != std::string::npos) {
    GTEST_SKIP() << "no mount namespace on this host; see LandlockAndSeccompAloneHaveNoEscapes";
  }
  int escapes = 0;
  int attempts = RunAll(Config::kFull, &escapes);
  std::printf("[ escapes  ] full sandbox: %d attempts, %d escapes\n", attempts, escapes);
  EXPECT_GE(attempts, 100);
  EXPECT_EQ(escapes, 0);
}

TEST_F(EscapeSuite, LandlockAndSeccompAloneHaveNoEscapes) {
  int escapes = 0;
  int attempts = RunAll(Config::kLandlockSeccompOnly, &escapes);
  std::printf("[ escapes  ] landlock + seccomp only: %d attempts, %d escapes\n", attempts, escapes);
  EXPECT_EQ(escapes, 0);
}

TEST_F(EscapeSuite, TheSuiteSeesEscapesWithoutASandbox) {
  int escapes = 0;
  int attempts = RunAll(Config::kNone, &escapes);
  ASSERT_GE(attempts, 20);
  EXPECT_EQ(escapes, attempts);
}

TEST_F(EscapeSuite, UnprivilegedUserHasNoEscapes) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  if (RunProcess({"setpriv", "--version"}, "/").exit_code != 0) {
    GTEST_SKIP() << "setpriv is not installed";
  }
  Sh("chown -R 65534:65534 " + base_, "/");
  Ran check = RunProcess({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                          AGENTEXEC_BIN, "sandbox", "-s", "workspace-write", "--", "true"},
                         ws_);
  if (check.exit_code != 0) {
    GTEST_SKIP() << "agentexec is not runnable as nobody here: " << check.output;
  }
  if (check.output.find("could not create a mount namespace") != std::string::npos) {
    GTEST_SKIP() << "unprivileged user namespaces are refused here: " << check.output;
  }
  int escapes = 0;
  int attempts = RunAll(Config::kUnprivileged, &escapes);
  std::printf("[ escapes  ] unprivileged user (user namespace): %d attempts, %d escapes\n",
              attempts, escapes);
  EXPECT_EQ(escapes, 0);
}

}  // namespace
}  // namespace ae::sandbox
