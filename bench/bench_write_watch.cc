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
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "base/cancel.h"
#include "bench/bench_dir.h"
#include "sandbox/policy.h"
#include "sandbox/prepared.h"
#include "sandbox/seccomp.h"
#include "sandbox/spawn.h"

namespace {

using namespace ae::sandbox;

constexpr int kFiles = 2000;
constexpr int kCalls = 2 * kFiles;  // an openat with O_CREAT and an unlinkat a file
constexpr const char* kLoopEnv = "AE_BENCH_WRITE_LOOP";

// Creates and removes kFiles files in the directory `dir_fd` (AT_FDCWD: the working one).
bool WriteLoop(int dir_fd) {
  char name[32];
  for (int i = 0; i < kFiles; ++i) {
    std::snprintf(name, sizeof name, "f%d", i);
    const int fd = ::openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    ::close(fd);
    if (::unlinkat(dir_fd, name, 0) != 0) return false;
  }
  return true;
}

// The confined command of the product rows: this binary, run with kLoopEnv set, runs the loop
// before any benchmark starts and exits.
[[maybe_unused]] const bool kLoopRunner = [] {
  if (::getenv(kLoopEnv) == nullptr) return false;
  ::_exit(WriteLoop(AT_FDCWD) ? 0 : 1);
}();

// Where the loop writes: tmpfs when there is one (the cost of the calls themselves is least
// there, so the notifications' share is largest), removed at exit.
const std::string& ScratchDir() {
  static const ae::bench::BenchDir dir(std::filesystem::is_directory("/dev/shm")
                                           ? "/dev/shm/ae-bench-watch"
                                           : "/var/tmp/ae-bench-watch");
  return dir.path();
}

void SetPerCall(benchmark::State& state) {
  state.counters["per_call"] = benchmark::Counter(
      kCalls, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Installs a filter that notifies openat and unlinkat; the listener, or -1.
int InstallNotifyFilter() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unlinkat, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
  };
  sock_fprog prog = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return static_cast<int>(
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
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

// The listener `number` of the child `pid`, copied into this process (pidfd_getfd, Linux 5.6:
// a parent may take its child's descriptors); -1 when that is refused.
int TakeListener(pid_t pid, int number) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return -1;
  const int fd = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, number, 0));
  ::close(pidfd);
  return fd;
}

// The loop in a forked child (as a command is one), under the filter when `notified`, its
// notifications answered from here.
void BM_WriteIntentCallsFloor(benchmark::State& state) {
  const std::string& dir = ScratchDir();
  if (dir.empty()) {
    state.SkipWithError("cannot make a scratch directory");
    return;
  }
  const bool notified = state.range(0) != 0;
  const bool direct_switch = state.range(0) == 1;
  for (auto _ : state) {
    int report[2] = {-1, -1};  // the child's listener number, to the parent
    if (notified && ::pipe2(report, O_CLOEXEC) != 0) {
      state.SkipWithError("pipe2 failed");
      return;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::chdir(dir.c_str()) != 0) ::_exit(1);
      if (notified) {
        const int listener = InstallNotifyFilter();
        if (::write(report[1], &listener, sizeof listener) != sizeof listener || listener < 0) {
          ::_exit(2);
        }
      }
      ::_exit(WriteLoop(AT_FDCWD) ? 0 : 1);
    }
    if (notified) {
      ::close(report[1]);
      int number = -1;
      const bool got = ::read(report[0], &number, sizeof number) == sizeof number && number >= 0;
      ::close(report[0]);
      const int listener = got ? TakeListener(pid, number) : -1;
      if (listener < 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        state.SkipWithError("no listener from the child (seccomp user notification, pidfd_getfd)");
        return;
      }
      if (direct_switch && ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
                                   SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0) {
        state.SkipWithError("no SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux before 6.6)");
      }
      AnswerAll(listener);
      ::close(listener);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("the loop failed");
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
  const std::string& dir = ScratchDir();
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
  std::error_code ec;
  spec.argv = {std::filesystem::read_symlink("/proc/self/exe", ec).string()};  // this binary
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
