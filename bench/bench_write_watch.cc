// What the write watch (sandbox/write_watch.h, agentexec's commands under -a on-failure) costs a
// write-heavy command, against the least any watch could cost: 2,000 files created and removed
// (4,000 write-intent calls, each a seccomp user notification under a watch):
//   notified:0  bare, in a forked child;
//   notified:1  the same child under a filter that notifies those two calls, answered by a thread
//            that does nothing but NOTIF_RECV and NOTIF_SEND (CONTINUE), with the kernel's
//            direct switch between the two (SYNC_WAKE_UP, Linux 6.6) as the watch asks: the
//            round trip alone;
//   notified:2  the same without the direct switch: two wake-ups across CPUs a call, what the
//            watch pays on a kernel before 6.6;
//   watch:0/1  the loop as a confined command through RunProcess (workspace-write, on tmpfs
//            where there is one), without and with the watch.
// The counter per_call is the wall time per write-intent call; a watch's own cost per call is
// the difference between its two rows. The loop is this binary again (AE_BENCH_WRITE_LOOP), so
// no interpreter's start-up blurs the difference.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

// Linux 6.6 (headers older than that lack the names): as in sandbox/write_watch.cc.
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#include "base/cancel.h"
#include "sandbox/policy.h"
#include "sandbox/prepared.h"
#include "sandbox/spawn.h"

namespace {

using namespace ae::sandbox;

constexpr int kFiles = 2000;
constexpr int kCalls = 2 * kFiles;  // an open with O_CREAT and an unlink a file
constexpr const char* kLoopEnv = "AE_BENCH_WRITE_LOOP";

void WriteLoop() {
  char name[32];
  for (int i = 0; i < kFiles; ++i) {
    std::snprintf(name, sizeof name, "f%d", i);
    const int fd = ::openat(AT_FDCWD, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) ::_exit(1);
    ::close(fd);
    if (::unlink(name) != 0) ::_exit(1);
  }
}

// The confined command of the product rows: this binary, run with kLoopEnv set, runs the loop
// before any benchmark starts and exits.
[[maybe_unused]] const bool kLoopRunner = [] {
  if (::getenv(kLoopEnv) == nullptr) return false;
  WriteLoop();
  ::_exit(0);
}();

// Where the loop writes: tmpfs when there is one (the cost of the calls themselves is least
// there, so the notifications' share is largest), removed at exit.
class Scratch {
 public:
  static const Scratch& Get() {
    static const Scratch scratch;
    return scratch;
  }
  std::string dir;

 private:
  Scratch() {
    std::string tmpl = std::filesystem::is_directory("/dev/shm") ? "/dev/shm/ae-bench-watch-XXXXXX"
                                                                 : "/var/tmp/ae-bench-watch-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) dir = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

void SetPerCall(benchmark::State& state) {
  state.counters["per_call"] = benchmark::Counter(
      kCalls, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Installs a filter that notifies openat and unlink, and sends its listener over `sock`.
bool InstallNotifyFilter(int sock) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unlink, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
  };
  sock_fprog prog = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  const long listener =
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  if (listener < 0) return false;
  const int fd = static_cast<int>(listener);
  char byte = 0;
  iovec iov = {&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cm), &fd, sizeof fd);
  const bool sent = ::sendmsg(sock, &msg, 0) == 1;
  ::close(fd);
  return sent;
}

int ReceiveListener(int sock) {
  char byte = 0;
  iovec iov = {&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) return -1;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  if (cm == nullptr || cm->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(cm), sizeof fd);
  return fd;
}

// Answers every notification at once until no process is left under the filter.
void AnswerAll(int listener) {
  seccomp_notif req{};
  seccomp_notif_resp resp{};
  for (;;) {
    pollfd pfd = {listener, POLLIN, 0};
    if (::poll(&pfd, 1, -1) < 0 && errno != EINTR) return;
    if ((pfd.revents & POLLIN) == 0) return;  // POLLHUP: the child is gone
    std::memset(&req, 0, sizeof req);
    if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) continue;
    std::memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  }
}

void BM_WriteIntentCallsFloor(benchmark::State& state) {
  const std::string& dir = Scratch::Get().dir;
  if (dir.empty()) {
    state.SkipWithError("cannot make a scratch directory");
    return;
  }
  const bool notified = state.range(0) != 0;
  const bool direct_switch = state.range(0) == 1;
  for (auto _ : state) {
    int socks[2] = {-1, -1};
    if (notified && ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, socks) != 0) {
      state.SkipWithError("socketpair failed");
      return;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::chdir(dir.c_str()) != 0) ::_exit(1);
      if (notified && !InstallNotifyFilter(socks[1])) ::_exit(2);
      WriteLoop();
      ::_exit(0);
    }
    std::thread answerer;
    if (notified) {
      ::close(socks[1]);
      const int listener = ReceiveListener(socks[0]);
      ::close(socks[0]);
      if (listener >= 0 && direct_switch &&
          ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) !=
              0) {
        state.SkipWithError("no SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux before 6.6)");
      }
      if (listener >= 0) {
        answerer = std::thread([listener] {
          AnswerAll(listener);
          ::close(listener);
        });
      }
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (answerer.joinable()) answerer.join();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("the loop failed (seccomp user notification unavailable?)");
      return;
    }
  }
  SetPerCall(state);
}
BENCHMARK(BM_WriteIntentCallsFloor)
    ->ArgName("notified")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_WriteIntentCallsConfined(benchmark::State& state) {
  const std::string& dir = Scratch::Get().dir;
  Settings settings;
  settings.mode = Mode::kWorkspaceWrite;
  ae::Result<Policy> policy = BuildPolicy(settings, dir);
  if (dir.empty() || !policy.ok()) {
    state.SkipWithError("no policy for a scratch directory");
    return;
  }
  ae::Result<PreparedPtr> prepared = Prepare(*policy);
  if (!prepared.ok()) {
    state.SkipWithError(prepared.message().c_str());
    return;
  }
  SpawnSpec spec;
  spec.argv = {"/proc/self/exe"};
  // The path of this binary, as the confined command runs it.
  std::error_code ec;
  spec.argv[0] = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  spec.cwd = dir;
  spec.env = {std::string(kLoopEnv) + "=1"};
  spec.sandbox = prepared->get();
  spec.watch_writes = state.range(0) == 1;
  for (auto _ : state) {
    ae::CancelToken cancel;
    ae::Result<RunResult> ran = RunProcess(spec, RunLimits{}, cancel);
    if (!ran.ok() || ran->exit_code != 0) {
      state.SkipWithError(ran.ok() ? ran->output.c_str() : ran.message().c_str());
      return;
    }
    if (spec.watch_writes && ran->writes.notifications < static_cast<uint64_t>(kCalls)) {
      state.SkipWithError("the watch saw fewer calls than the loop made");
      return;
    }
  }
  SetPerCall(state);
}
BENCHMARK(BM_WriteIntentCallsConfined)
    ->ArgName("watch")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
