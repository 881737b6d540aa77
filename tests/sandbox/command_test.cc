// `agentexec sandbox` as users meet it: what is allowed keeps working, exit codes pass
// through, and a kernel that cannot enforce the mode stops with exit 3.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/cancel.h"
#include "sandbox/host_sockets.h"
#include "sandbox/landlock.h"
#include "sandbox/prepared.h"
#include "sandbox/spawn.h"
#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::Exists;
using testing::ListenOnLoopback;
using testing::Ran;
using testing::ReadText;
using testing::RealPath;
using testing::RunProcess;
using testing::ScratchDir;
using testing::Sh;
using testing::WriteText;

class SandboxCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = RealPath(dir_.path());
    ws_ = base_ + "/ws";
    Sh("mkdir -p ws outside && git init -q ws && echo hi > ws/a.txt && git -C ws add a.txt && "
       "git -C ws -c user.email=t@t -c user.name=t commit -qm init",
       base_);
  }
  void RequireLandlock() {
    if (landlock::Abi() < 1) {
      GTEST_SKIP() << "Landlock is not available on this kernel: " << std::strerror(errno);
    }
  }
  // agentexec sandbox -s MODE [extra...] -- command...
  Ran Sandbox(const std::string& mode, std::vector<std::string> command,
              std::vector<std::string> extra = {},
              std::vector<std::pair<std::string, std::string>> env = {}) {
    std::vector<std::string> argv = {AGENTEXEC_BIN, "sandbox", "-s", mode};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return RunProcess(argv, ws_, env);
  }
  Ran Script(const std::string& mode, const std::string& script,
             std::vector<std::string> extra = {}) {
    return Sandbox(mode, {"/bin/sh", "-c", script}, extra);
  }
  ScratchDir dir_;
  std::string base_, ws_;
};

// The workspace and the run's own /tmp are writable; the host's /tmp (where the scratch
// directory lives, beside the workspace) is not. What the command leaves in its /tmp is not in
// the host's, and the directory is gone when the run ends. $TMPDIR names it.
TEST_F(SandboxCommand, WorkspaceAndTheRunsOwnTmpAreWritable) {
  RequireLandlock();
  const std::string host_tmp_file = base_ + "/in-tmp";  // the scratch dir lives under /tmp
  Ran ran = Script("workspace-write",
                   "echo new > new.txt && mkdir d && mv new.txt d/moved && rm a.txt && "
                   "mkfifo fifo && echo t > /tmp/own-" +
                       std::to_string(::getpid()) + " && echo \"$TMPDIR\" && echo t > " +
                       host_tmp_file + "; echo $?");
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.output,
            "/tmp\n/bin/sh: 1: cannot create " + host_tmp_file + ": Read-only file system\n2\n");
  EXPECT_EQ(ReadText(ws_ + "/d/moved"), "new\n");
  EXPECT_FALSE(Exists(ws_ + "/a.txt"));
  EXPECT_FALSE(Exists(host_tmp_file));
  EXPECT_FALSE(Exists("/tmp/own-" + std::to_string(::getpid())));
  // shared_tmp: the host's /tmp, as codex gives it.
  ran = Script("workspace-write", "echo t > " + host_tmp_file,
               {"-c", "sandbox_workspace_write.shared_tmp=true"});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ReadText(host_tmp_file), "t\n");
}

// With the host's /tmp shared and the workspace under it, both are roots, but each is its own
// mount (so the workspace cannot be moved away), and a rename from one into the other is
// EXDEV, as between two file systems and as with codex. `mv` copies instead.
TEST_F(SandboxCommand, RenameBetweenNestedRootsIsCrossDevice) {
  RequireLandlock();
  testing::WriteText(base_ + "/tmp-made", "t\n");
  const std::vector<std::string> shared = {"-c", "sandbox_workspace_write.shared_tmp=true"};
  Ran ran = Sandbox("workspace-write", {SANDBOX_PROBE, "rename", base_ + "/tmp-made", ws_ + "/b"},
                    shared);
  EXPECT_EQ(ran.exit_code, 1) << ran.output;
  EXPECT_NE(ran.output.find("(errno 18)"), std::string::npos) << ran.output;
  ran = Script("workspace-write", "mv " + base_ + "/tmp-made b && cat b", shared);
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.output, "t\n");
}

TEST_F(SandboxCommand, ReadOnlyReadsButDoesNotWrite) {
  RequireLandlock();
  Ran ran = Script("read-only", "cat a.txt && ls / >/dev/null && echo ok > /dev/null && echo done");
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.output, "hi\ndone\n");
  ran = Script("read-only", "echo x > a.txt");
  EXPECT_NE(ran.exit_code, 0);
  EXPECT_EQ(ReadText(ws_ + "/a.txt"), "hi\n");
  ran = Script("read-only", "echo x > " + base_ + "/tmp-file");
  EXPECT_NE(ran.exit_code, 0);
  EXPECT_FALSE(Exists(base_ + "/tmp-file"));
}

TEST_F(SandboxCommand, UnixSocketsWork) {
  RequireLandlock();
  Ran ran = Sandbox("workspace-write", {SANDBOX_PROBE, "unix-echo", ws_ + "/s.sock"});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  ran = Sandbox("workspace-write", {SANDBOX_PROBE, "unix-echo", "@ae-sandbox-inside"});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  ran = Sandbox("read-only", {SANDBOX_PROBE, "socketpair", "unix"});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  if (RunProcess({"python3", "-c", "pass"}, "/").exit_code == 0) {
    ran = Sandbox("workspace-write",
                  {"python3", "-c", "import socket; a, b = socket.socketpair(); print('pair')"});
    EXPECT_EQ(ran.exit_code, 0) << ran.output;
    EXPECT_EQ(ran.output, "pair\n");
  }
}

TEST_F(SandboxCommand, GitStatusWorks) {
  RequireLandlock();
  WriteText(ws_ + "/b.txt", "b\n");
  for (const char* mode : {"workspace-write", "read-only"}) {
    Ran ran = Sandbox(mode, {"git", "status", "--porcelain"});
    EXPECT_EQ(ran.exit_code, 0) << mode << ": " << ran.output;
    EXPECT_EQ(ran.output, "?? b.txt\n") << mode;
  }
}

TEST_F(SandboxCommand, CompilerWorksInTheWorkspace) {
  RequireLandlock();
  if (RunProcess({"cc", "--version"}, "/").exit_code != 0) GTEST_SKIP() << "no cc installed";
  WriteText(ws_ + "/hello.c", "#include <stdio.h>\nint main(void){puts(\"hello\");return 0;}\n");
  Ran ran = Script("workspace-write", "cc -o hello hello.c && ./hello");
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.output, "hello\n");
}

TEST_F(SandboxCommand, TerminalsAndChildrenWork) {
  RequireLandlock();
  if (RunProcess({"python3", "-c", "pass"}, "/").exit_code == 0) {
    Ran ran = Sandbox("read-only", {"python3", "-c",
                                    "import os, pty; m, s = pty.openpty(); os.write(s, b'x'); "
                                    "print(os.read(m, 1).decode())"});
    EXPECT_EQ(ran.exit_code, 0) << ran.output;
    EXPECT_EQ(ran.output, "x\n");
  }
  Ran ran = Script("read-only", "sleep 5 & kill $! && wait $!; echo status=$?");
  EXPECT_NE(ran.output.find("status=143\n"), std::string::npos) << ran.output;
}

// With the mount namespace /dev/pts is the command's own devpts instance: none of the host's
// terminals is listed there, and a pty it opens is numbered in its own instance. Without it,
// Landlock keeps /dev/pts closed, so new ptys fail too (a documented limit).
TEST_F(SandboxCommand, DevPtsIsTheCommandsOwn) {
  RequireLandlock();
  Ran ran = Script("workspace-write", "ls /dev/pts");
  if (ran.output.find("could not create a mount namespace") != std::string::npos) {
    GTEST_SKIP() << "no mount namespace here: " << ran.output;
  }
  EXPECT_EQ(ran.output, "ptmx\n");
  ran = Sandbox("workspace-write",
                {"python3", "-c", "import os; m, s = os.openpty(); print(os.ttyname(s))"});
  EXPECT_EQ(ran.output, "/dev/pts/0\n");
  ran = Sandbox("workspace-write",
                {"python3", "-c",
                 "import os\ntry: os.openpty()\nexcept PermissionError as e: print('refused')"},
                {}, {{"AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1"}});
  EXPECT_NE(ran.output.find("refused\n"), std::string::npos) << ran.output;
}

TEST_F(SandboxCommand, ExitCodePassesThrough) {
  RequireLandlock();
  EXPECT_EQ(Script("read-only", "exit 7").exit_code, 7);
  EXPECT_EQ(Script("workspace-write", "exit 0").exit_code, 0);
  EXPECT_EQ(Script("danger-full-access", "exit 42").exit_code, 42);
}

TEST_F(SandboxCommand, NetworkIsOffUnlessEnabled) {
  RequireLandlock();
  Ran off = Script("workspace-write", "echo \"[$CODEX_SANDBOX_NETWORK_DISABLED]\"");
  EXPECT_EQ(off.output, "[1]\n");
  const std::vector<std::string> on = {"-c", "sandbox_workspace_write.network_access=true"};
  Ran enabled = Sandbox("workspace-write", {SANDBOX_PROBE, "socket", "inet"}, on);
  EXPECT_EQ(enabled.exit_code, 0) << enabled.output;
  Ran env = Script("workspace-write", "echo \"[$CODEX_SANDBOX_NETWORK_DISABLED]\"", on);
  EXPECT_EQ(env.output, "[]\n");
  // Read-only has no network switch.
  Ran ro = Sandbox("read-only", {SANDBOX_PROBE, "socket", "inet"}, on);
  EXPECT_EQ(ro.exit_code, 1) << ro.output;
}

// A network socket inherited from whoever started us is closed on exec when the network is
// off; pipes (make's jobserver) stay usable.
// Only 0-2 pass; a socket, a pipe (even make's jobserver) or a file inherited
// beyond them is closed on exec, with the network on or off.
TEST_F(SandboxCommand, InheritedDescriptorsBeyondStdioAreClosed) {
  RequireLandlock();
  int listener = -1;
  sockaddr_in addr;
  ASSERT_NO_FATAL_FAILURE(ListenOnLoopback(SOCK_STREAM, 1, &listener, &addr));
  int client = ::socket(AF_INET, SOCK_STREAM, 0);  // no SOCK_CLOEXEC: inherited
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  int server = ::accept(listener, nullptr, nullptr);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);

  const std::vector<std::string> on = {"-c", "sandbox_workspace_write.network_access=true"};
  for (const std::vector<std::string>& extra : {std::vector<std::string>{}, on}) {
    for (int fd : {client, pipe_fds[1]}) {
      Ran ran = Sandbox("workspace-write", {SANDBOX_PROBE, "write-fd", std::to_string(fd)}, extra);
      EXPECT_EQ(ran.exit_code, 1) << ran.output;
      EXPECT_NE(ran.output.find("Bad file descriptor"), std::string::npos) << ran.output;
    }
  }
  char buf[16];
  EXPECT_EQ(::recv(server, buf, sizeof buf, MSG_DONTWAIT), -1);
  ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  EXPECT_EQ(::read(pipe_fds[0], buf, sizeof buf), -1);
  // Unconfined, nothing is closed: the same write arrives.
  Ran open =
      Sandbox("danger-full-access", {SANDBOX_PROBE, "write-fd", std::to_string(pipe_fds[1])});
  EXPECT_EQ(open.exit_code, 0) << open.output;
  EXPECT_EQ(::read(pipe_fds[0], buf, sizeof buf), 6);
  for (int fd : {listener, client, server, pipe_fds[0], pipe_fds[1]}) ::close(fd);
}

TEST_F(SandboxCommand, DangerFullAccessAllowsEverything) {
  Ran ran = Sandbox("danger-full-access", {SANDBOX_PROBE, "create", base_ + "/outside/x"});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_TRUE(Exists(base_ + "/outside/x"));
  EXPECT_EQ(Sandbox("danger-full-access", {SANDBOX_PROBE, "socket", "inet"}).exit_code, 0);
  EXPECT_EQ(Sandbox("danger-full-access", {SANDBOX_PROBE, "create", ws_ + "/.git/x"}).exit_code, 0);
}

TEST_F(SandboxCommand, AddDirIsWritable) {
  RequireLandlock();
  const std::string extra = base_ + "/outside";
  Ran denied = Sandbox("workspace-write", {SANDBOX_PROBE, "create", extra + "/x"},
                       {"-c", "sandbox_workspace_write.exclude_slash_tmp=true"});
  EXPECT_EQ(denied.exit_code, 1) << denied.output;
  Ran ran = Sandbox("workspace-write", {SANDBOX_PROBE, "create", extra + "/x"},
                    {"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "--add-dir", extra});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  Ran roots = Sandbox("workspace-write", {SANDBOX_PROBE, "create", extra + "/y"},
                      {"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c",
                       "sandbox_workspace_write.writable_roots=[\"" + extra + "\"]"});
  EXPECT_EQ(roots.exit_code, 0) << roots.output;
}

TEST_F(SandboxCommand, MissingAddDirWarns) {
  RequireLandlock();
  Ran ran = Sandbox("workspace-write", {"true"}, {"--add-dir", base_ + "/missing"});
  EXPECT_EQ(ran.exit_code, 0);
  EXPECT_NE(ran.output.find("sandbox: --add-dir " + base_ +
                            "/missing is not writable in this run: No such file or directory\n"),
            std::string::npos)
      << ran.output;
}

TEST_F(SandboxCommand, CommandNotFound) {
  RequireLandlock();
  Ran ran = Sandbox("read-only", {"agentexec-no-such-command"});
  EXPECT_EQ(ran.exit_code, 127);
  EXPECT_EQ(ran.output,
            "agentexec sandbox: agentexec-no-such-command: No such file or directory\n");
}

// `agentexec sandbox` is parsed by the main command line parser and configured by the config
// loader: its errors are worded as exec's.
TEST_F(SandboxCommand, UsageErrors) {
  const std::string usage =
      "\n\nUsage: agentexec sandbox [-s MODE] [--add-dir DIR]... [-c KEY=VALUE]... [--] COMMAND "
      "[ARGS]...\n\nFor more information, try '--help'.\n";
  Ran bad = Sandbox("read-write", {"true"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.output,
            "error: invalid value 'read-write' for '--sandbox <MODE>'\n"
            "  [possible values: read-only, workspace-write, danger-full-access]" +
                usage);
  Ran none = RunProcess({AGENTEXEC_BIN, "sandbox", "-s", "read-only"}, ws_);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.output, "error: 'sandbox' needs a COMMAND to run" + usage);
  Ran config =
      Sandbox("workspace-write", {"true"}, {"-c", "sandbox_workspace_write.network_access=maybe"});
  EXPECT_EQ(config.exit_code, 2);
  EXPECT_EQ(config.output,
            "error: -c sandbox_workspace_write.network_access=maybe: "
            "'sandbox_workspace_write.network_access' expects true or false, got 'maybe'\n");
}

// The sandbox is configured as for a run: the user's config file chooses it, and a project
// config cannot loosen it.
TEST_F(SandboxCommand, ConfigFilesChooseTheSandboxAsForARun) {
  RequireLandlock();
  Sh("mkdir -p home && printf 'sandbox_mode = \"workspace-write\"\\n' > home/config.toml", base_);
  Ran ran = RunProcess({AGENTEXEC_BIN, "sandbox", "--", "/bin/sh", "-c", "echo x > made.txt"}, ws_,
                       {{"AGENTEXEC_HOME", base_ + "/home"}});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_TRUE(Exists(ws_ + "/made.txt"));

  Sh("rm home/config.toml && mkdir -p ws/.agentexec && printf 'sandbox_mode = "
     "\"workspace-write\"\\n' > ws/.agentexec/config.toml",
     base_);
  ran = RunProcess({AGENTEXEC_BIN, "sandbox", "--", "/bin/sh", "-c", "echo x > refused.txt"}, ws_,
                   {{"AGENTEXEC_HOME", base_ + "/home"}});
  EXPECT_NE(ran.exit_code, 0) << ran.output;
  EXPECT_FALSE(Exists(ws_ + "/refused.txt"));
  EXPECT_EQ(ran.output.substr(0, ran.output.find('\n')),
            "warning: " + ws_ +
                "/.agentexec/config.toml:1:16: ignored 'sandbox_mode': a project config may not "
                "loosen it (keeping \"read-only\" from default)");
}

TEST_F(SandboxCommand, DefaultModeIsReadOnly) {
  RequireLandlock();
  Ran ran = RunProcess({AGENTEXEC_BIN, "sandbox", "--", SANDBOX_PROBE, "create", ws_ + "/x"}, ws_);
  EXPECT_EQ(ran.exit_code, 1) << ran.output;
  EXPECT_FALSE(Exists(ws_ + "/x"));
}

TEST_F(SandboxCommand, NoLandlockStopsWithExit3) {
  const std::string marker = ws_ + "/ran";
  Ran ran = Sandbox("workspace-write", {"/bin/sh", "-c", "touch " + marker}, {},
                    {{"AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK", "1"}});
  EXPECT_EQ(ran.exit_code, 3);
  EXPECT_EQ(ran.output,
            "sandbox: cannot enforce workspace-write: Landlock is not supported by this kernel "
            "(landlock_create_ruleset: Function not implemented). Run with -s "
            "danger-full-access where the container is the boundary, or enable Landlock "
            "(CONFIG_SECURITY_LANDLOCK, lsm=landlock).\n");
  EXPECT_FALSE(Exists(marker));
}

TEST_F(SandboxCommand, NoSeccompStopsWithExit3) {
  RequireLandlock();
  Ran ran = Sandbox("read-only", {"true"}, {}, {{"AGENTEXEC_SANDBOX_FAKE_NO_SECCOMP", "1"}});
  EXPECT_EQ(ran.exit_code, 3);
  EXPECT_EQ(ran.output,
            "sandbox: cannot enforce read-only: seccomp filters are refused here "
            "(prctl(PR_SET_SECCOMP): Invalid argument). Run with -s danger-full-access where the "
            "container is the boundary, or allow seccomp filters (CONFIG_SECCOMP_FILTER).\n");
}

TEST_F(SandboxCommand, NoNamespacesWarnsAndKeepsLandlock) {
  RequireLandlock();
  Ran ran =
      Sandbox("workspace-write", {"/bin/sh", "-c", "echo x > .git/x && echo y > ../outside/y"},
              {"-c", "sandbox_workspace_write.exclude_slash_tmp=true"},
              {{"AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1"}});
  EXPECT_NE(ran.output.find("sandbox: .git, .agentexec, .codex and protected_paths are writable "
                            "in this run: could not create a mount namespace (unshare: "
                            "Operation not permitted)\n"),
            std::string::npos)
      << ran.output;
  EXPECT_NE(ran.exit_code, 0);
  EXPECT_TRUE(Exists(ws_ + "/.git/x"));  // the documented gap
  EXPECT_FALSE(Exists(base_ + "/outside/y"));
}

// ---- Kernel gaps: the caller's stdio on files outside the roots, host Unix sockets.

// A listening pathname socket of the host's, bound now; -1 on failure.
int ListenAt(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un un = {};
  un.sun_family = AF_UNIX;
  std::strncpy(un.sun_path, path.c_str(), sizeof un.sun_path - 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&un), sizeof un) != 0 || ::listen(fd, 8) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool Pending(int listener) {
  int conn = ::accept(listener, nullptr, nullptr);
  if (conn < 0) return false;
  ::close(conn);
  return true;
}

// `< file`, `> log`, `2>&1` on files outside the roots work as unconfined (offsets, order,
// append, exit status), but the command cannot change those files' metadata through them.
TEST_F(SandboxCommand, StdioOnOutsideFilesWorksWithoutTheirMetadata) {
  RequireLandlock();
  const std::string ae = std::string(AGENTEXEC_BIN) +
                         " sandbox -s workspace-write -c "
                         "sandbox_workspace_write.exclude_slash_tmp=true -- ";
  const std::string probe = std::string(SANDBOX_PROBE) + " ";
  auto sh = [&](const std::string& script) { return RunProcess({"/bin/sh", "-c", script}, ws_); };
  Ran ran = sh(ae + "true");
  if (ran.output.find("could not create a mount namespace") != std::string::npos) {
    GTEST_SKIP() << "no mount namespace here: " << ran.output;
  }
  WriteText(base_ + "/outside/in", "b\na\n");
  EXPECT_EQ(sh(ae + "cat < ../outside/in").output, "b\na\n");
  EXPECT_EQ(sh(ae + "sort < ../outside/in").output, "a\nb\n");
  // The command starts where the caller's stdin stands, and it stays seekable.
  EXPECT_EQ(sh("{ read first; " + ae + "cat; } < ../outside/in").output, "a\n");
  EXPECT_EQ(sh(ae + "python3 -c 'import sys; sys.stdin.seek(2); print(sys.stdin.read(1))' "
                    "< ../outside/in")
                .output,
            "a\n");
  // Nothing is read ahead: a loop over a list is not emptied by commands that leave stdin be.
  EXPECT_EQ(sh("while read x; do " + ae + "true; echo $x; done < ../outside/in").output, "b\na\n");
  // Output: the caller's offset, the order of stdout and stderr, the exit status.
  ran = sh("{ echo 1; " + ae + "sh -c 'echo 2; echo 3 >&2; echo 4; exit 7'; echo rc=$?; } " +
           "> ../outside/log 2>&1");
  EXPECT_EQ(ReadText(base_ + "/outside/log"), "1\n2\n3\n4\nrc=7\n");
  ran = sh(ae + "echo 5 >> ../outside/log");
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ReadText(base_ + "/outside/log"), "1\n2\n3\n4\nrc=7\n5\n");
  // Metadata, through the descriptor or its /proc link: refused, and the files unchanged.
  ASSERT_EQ(::chmod((base_ + "/outside/in").c_str(), 0644), 0);
  ran = sh(ae + probe + "fd-fchmod 0 < ../outside/in");
  EXPECT_EQ(ran.output, "denied: fchmod: Read-only file system (errno 30)\n");
  ran = sh(ae + probe + "chmod /proc/self/fd/0 < ../outside/in");
  EXPECT_EQ(ran.output, "denied: chmod: Read-only file system (errno 30)\n");
  // (fchmod to the same mode: were it to get through, the host's /dev/null would not change.)
  ran = sh(ae + probe + "fd-fchmod 0 < /dev/null");
  EXPECT_EQ(ran.output, "denied: fchmod: Read-only file system (errno 30)\n");
  ran = sh(ae + probe + "fd-fchmod 1 > ../outside/log");
  EXPECT_EQ(ran.exit_code, 1);
  EXPECT_EQ(ReadText(base_ + "/outside/log"),
            "denied: fstat (not the file it was opened on): Bad file descriptor (errno 9)\n");
  ran = sh(ae + probe + "fd-futimens 2 2> ../outside/log");
  EXPECT_EQ(ran.output,
            "denied: fstat (not the file it was opened on): Bad file descriptor (errno 9)\n");
  struct stat st = {};
  ASSERT_EQ(::stat((base_ + "/outside/in").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  ASSERT_EQ(::stat((base_ + "/outside/log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  // A file that cannot be opened again by its name (deleted) is refused, not passed.
  WriteText(base_ + "/outside/gone", "g\n");
  ran = sh("exec 3< ../outside/gone; rm ../outside/gone; " + ae + "cat <&3");
  EXPECT_EQ(ran.exit_code, 126);
  EXPECT_EQ(ran.output, "agentexec sandbox: stdin (" + base_ +
                            "/outside/gone (deleted)) cannot be opened again inside the "
                            "sandbox: No such file or directory; pass it through a pipe instead\n");
  // Inside a writable root a descriptor is passed as given.
  WriteText(ws_ + "/in", "w\n");
  ran = sh(ae + probe + "fd-fchmod 0 < in");
  EXPECT_EQ(ran.output, "ok\n");
}

// With the network off a host's Unix socket cannot be reached; with it on, or unconfined, it
// can; a command's own server can always be reached by it.
TEST_F(SandboxCommand, HostUnixSocketsNeedTheNetwork) {
  RequireLandlock();
  const std::string outside = base_ + "/outside/host.sock";
  int host = ListenAt(outside);
  ASSERT_GE(host, 0) << std::strerror(errno);
  const std::vector<std::string> connect = {SANDBOX_PROBE, "unix-connect-path", outside};
  Ran ran = Sandbox("workspace-write", connect);
  if (ran.output.find("could not create a mount namespace") != std::string::npos) {
    EXPECT_NE(ran.output.find("sandbox: host Unix sockets (e.g. /var/run/docker.sock) are "
                              "reachable in this run: could not create a mount namespace ("),
              std::string::npos)
        << ran.output;
    ::close(host);
    GTEST_SKIP() << "no mount namespace here: " << ran.output;
  }
  EXPECT_EQ(ran.output, "denied: connect: Connection refused (errno 111)\n");
  EXPECT_FALSE(Pending(host));
  ran = Sandbox("read-only", connect);
  EXPECT_EQ(ran.output, "denied: connect: Connection refused (errno 111)\n");
  EXPECT_FALSE(Pending(host));
  ran = Sandbox("workspace-write", connect, {"-c", "sandbox_workspace_write.network_access=true"});
  EXPECT_EQ(ran.output, "ok\n");
  EXPECT_TRUE(Pending(host));
  ran = Sandbox("danger-full-access", connect);
  EXPECT_EQ(ran.output, "ok\n");
  EXPECT_TRUE(Pending(host));
  ::close(host);
  // The command's own servers: in the workspace, in /tmp, and in read-only mode in its
  // private /dev/shm.
  ran = Sandbox("workspace-write", {SANDBOX_PROBE, "unix-serve-connect", ws_ + "/own.sock"});
  EXPECT_EQ(ran.output, "ok\n");
  ran = Sandbox("workspace-write", {SANDBOX_PROBE, "unix-serve-connect", "/tmp/own.sock"});
  EXPECT_EQ(ran.output, "ok\n");
  ran = Sandbox("read-only", {SANDBOX_PROBE, "unix-serve-connect", "/dev/shm/own.sock"});
  EXPECT_EQ(ran.output, "ok\n");
  // The fallback says what it cannot hide, with the network off only.
  ran = Sandbox("read-only", {"true"}, {}, {{"AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1"}});
  EXPECT_NE(ran.output.find("sandbox: host Unix sockets (e.g. /var/run/docker.sock) are "
                            "reachable in this run: could not create a mount namespace (unshare: "
                            "Operation not permitted)\n"),
            std::string::npos)
      << ran.output;
  ran = Sandbox("workspace-write", {"true"}, {"-c", "sandbox_workspace_write.network_access=true"},
                {{"AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1"}});
  EXPECT_EQ(ran.output.find("host Unix sockets"), std::string::npos) << ran.output;
}

// /proc/net/unix as the kernel prints it: only absolute paths are visited (not the header,
// unbound, abstract or relative sockets), a path keeps its spaces, and lines split across
// reads are whole.
TEST(HostSocketsParse, VisitsAbsolutePathsOnly) {
  std::string text =
      "Num       RefCount Protocol Flags    Type St Inode Path\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01 12345 /run/docker.sock\n"
      "0000000000000000: 00000003 00000000 00000000 0001 03  1057\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01  2001 @/tmp/.X11-unix/X0\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01  2002 relative.sock\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01  2003 /tmp/with space.sock\n";
  for (int i = 0; i < 200; ++i) {
    text += "0000000000000000: 00000002 00000000 00010000 0001 01 " + std::to_string(3000 + i) +
            " /tmp/many/" + std::string(40, 'x') + std::to_string(i) + "\n";
  }
  text += "0000000000000000: 00000002 00000000 00010000 0001 01  4000 /no/newline";
  ScratchDir dir;
  const std::string path = dir.path() + "/unix";
  WriteText(path, text);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::vector<std::pair<unsigned long, std::string>> seen;
  ASSERT_TRUE(ForEachPathSocket(
      fd,
      [](void* ctx, unsigned long inode, const char* p) {
        static_cast<std::vector<std::pair<unsigned long, std::string>>*>(ctx)->emplace_back(inode,
                                                                                            p);
      },
      &seen));
  ::close(fd);
  ASSERT_EQ(seen.size(), 203u);
  EXPECT_EQ(seen[0], std::make_pair(12345ul, std::string("/run/docker.sock")));
  EXPECT_EQ(seen[1], std::make_pair(2003ul, std::string("/tmp/with space.sock")));
  EXPECT_EQ(seen[201], std::make_pair(3199ul, "/tmp/many/" + std::string(40, 'x') + "199"));
  EXPECT_EQ(seen[202], std::make_pair(4000ul, std::string("/no/newline")));
}

// Within one session (the spawner agentexec's commands use): a server an earlier command
// started stays reachable to later ones; a host's socket in the workspace, bound before the
// session prepared its sandbox, does not.
class SessionSockets : public testing::WorkspaceWriteTest {};

TEST_F(SessionSockets, AnEarlierCommandsServerStaysReachable) {
  const std::string ws = base_ + "/ws";
  int host = ListenAt(ws + "/host.sock");
  ASSERT_GE(host, 0) << std::strerror(errno);
  Result<PreparedPtr> prepared = Prepare(policy_);
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  if (DescribePrepared(**prepared).find("mount namespace") == std::string::npos) {
    ::close(host);
    GTEST_SKIP() << "no mount namespace here";
  }
  auto spec = [&](std::vector<std::string> argv) {
    SpawnSpec s;
    s.argv = std::move(argv);
    s.cwd = ws;
    s.env = {"PATH=/usr/bin:/bin"};
    s.sandbox = prepared->get();
    return s;
  };
  Result<Spawned> server = Spawn(spec({SANDBOX_PROBE, "unix-listen", ws + "/own.sock"}));
  ASSERT_TRUE(server.ok() && server->process.has_value());
  std::string said;
  for (int i = 0; i < 500 && said.find("listening\n") == std::string::npos; ++i) {
    pollfd p = {server->process->output_fd(), POLLIN, 0};
    if (::poll(&p, 1, 20) > 0) {
      char buf[256];
      ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n > 0) said.append(buf, static_cast<size_t>(n));
    }
  }
  ASSERT_EQ(said, "listening\n");
  RunLimits limits;
  CancelToken cancel;
  Result<RunResult> client =
      RunProcess(spec({SANDBOX_PROBE, "unix-connect-path", ws + "/own.sock"}), limits, cancel);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ(client->output, "ok\n");
  // Reap ends whatever still runs in the server's group, so it waits for the server to finish
  // first: its output ends (EOF) once it has served the connection and exited.
  said.clear();
  for (int i = 0; i < 500; ++i) {
    pollfd p = {server->process->output_fd(), POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    char buf[256];
    ssize_t n = ::read(p.fd, buf, sizeof buf);
    if (n <= 0) break;
    said.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(said, "ok\n");
  int code = -1, sig = 0;
  server->process->Reap(&code, &sig);
  EXPECT_EQ(code, 0);
  client =
      RunProcess(spec({SANDBOX_PROBE, "unix-connect-path", ws + "/host.sock"}), limits, cancel);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ(client->output, "denied: connect: Connection refused (errno 111)\n");
  EXPECT_FALSE(Pending(host));
  ::close(host);
}

}  // namespace
}  // namespace ae::sandbox
