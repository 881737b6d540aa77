// RunProcess: fork, confine, exec, capture, and end the whole process group.
//
// Between fork and execve the child runs only async-signal-safe system calls: everything it
// needs (the executable path, argv/envp arrays, the prepared sandbox) is built beforehand in
// the parent, because other threads may hold malloc's lock at the moment of fork.
//
// stdout and stderr share one pipe, so the kernel keeps their bytes in the order they were
// written; two pipes polled side by side would reorder bursts.
#include "sandbox/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "base/child.h"
#include "base/exec_path.h"
#include "base/fd.h"

namespace ae::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

// Bounded capture: the first half of the budget verbatim, then a ring of the last half.
class OutputCapture {
 public:
  explicit OutputCapture(size_t max_bytes)
      : head_cap_(max_bytes / 2), tail_cap_(max_bytes - max_bytes / 2) {}

  void Append(const char* data, size_t n) {
    total_ += n;
    newlines_ += static_cast<uint64_t>(std::count(data, data + n, '\n'));
    if (head_.size() < head_cap_) {
      size_t take = std::min(n, head_cap_ - head_.size());
      head_.append(data, take);
      data += take;
      n -= take;
    }
    if (n == 0 || tail_cap_ == 0) return;
    if (n >= tail_cap_) {  // only the last tail_cap_ bytes can survive
      data += n - tail_cap_;
      n = tail_cap_;
    }
    if (ring_.size() < tail_cap_) {  // still filling linearly
      size_t take = std::min(n, tail_cap_ - ring_.size());
      ring_.append(data, take);
      data += take;
      n -= take;
    }
    while (n > 0) {
      size_t take = std::min(n, tail_cap_ - pos_);
      std::memcpy(ring_.data() + pos_, data, take);
      pos_ = (pos_ + take) % tail_cap_;
      data += take;
      n -= take;
    }
  }

  void Finish(RunResult& r) {
    r.total_bytes = total_;
    r.truncated = total_ > head_cap_ + tail_cap_;
    r.head_bytes = head_.size();
    r.output = std::move(head_);
    r.output.reserve(r.output.size() + ring_.size());
    r.output.append(ring_, pos_, std::string::npos);
    r.output.append(ring_, 0, pos_);
    r.total_lines = newlines_ + (r.output.empty() || r.output.back() == '\n' ? 0 : 1);
  }

 private:
  size_t head_cap_, tail_cap_;
  std::string head_, ring_;
  size_t pos_ = 0;  // next write position once the ring is full
  uint64_t total_ = 0;
  uint64_t newlines_ = 0;
};

// What the child reports through the close-on-exec pipe when it fails before execve.
struct ChildFailure {
  int err;
  char step[96];
};

[[noreturn]] void ChildFail(int fd, const char* step, int err, int code) noexcept {
  ChildFailure f{};
  f.err = err;
  for (size_t i = 0; step[i] != '\0' && i + 1 < sizeof f.step; ++i) f.step[i] = step[i];
  [[maybe_unused]] ssize_t n = ::write(fd, &f, sizeof f);
  ::_exit(code);
}

struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* cwd;
  int devnull;
  int out_w;
  int err_w;  // the failure pipe
  pid_t parent;
  const PreparedSandbox* sandbox;
  int watch_fd;  // WriteWatch's child end, or -1
};

[[noreturn]] void RunChild(const ChildPlan& p) noexcept {
  ResetSignalsInChild();
  // A new session: the whole tree can be killed as a group, and no controlling terminal.
  const char* group_step = nullptr;
  int group_err = 0;
  if (!EnterOwnSessionTiedToParent(p.parent, 126, &group_step, &group_err)) {
    ChildFail(p.err_w, group_step, group_err, 126);
  }

  // Nothing of agentexec's stdin reaches even the sandbox's supervisor; the command's own
  // stdin is opened again below, inside the confinement.
  if (::dup2(p.devnull, 0) < 0) ChildFail(p.err_w, "dup2(stdin)", errno, 126);
  if (::dup2(p.out_w, 1) < 0) ChildFail(p.err_w, "dup2(stdout)", errno, 126);
  if (::dup2(p.out_w, 2) < 0) ChildFail(p.err_w, "dup2(stderr)", errno, 126);
  CloseOnExecFrom3();
  if (p.cwd[0] != '\0' && ::chdir(p.cwd) != 0) ChildFail(p.err_w, "chdir", errno, 126);

  if (p.sandbox != nullptr) {
    const char* step = "apply";
    int err = 0;
    if (!ApplyInChild(*p.sandbox, p.watch_fd, &step, &err)) {
      char buf[sizeof(ChildFailure::step)] = "sandbox: ";
      size_t i = 9;
      for (size_t k = 0; step[k] != '\0' && i + 1 < sizeof buf; ++k) buf[i++] = step[k];
      buf[i] = '\0';
      ChildFail(p.err_w, buf, err, 126);
    }
  }
  // The command's only descriptors are 0-2 (the rest are close-on-exec). Its stdin is a
  // /dev/null opened here, inside the mount namespace: one opened before it would still carry
  // write access to the host's mount (fchmod, fchown, futimens through it reached agentexec's
  // own /dev/null).
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) ChildFail(p.err_w, "open /dev/null", errno, 126);
  if (::dup2(null_fd, 0) < 0) ChildFail(p.err_w, "dup2(stdin)", errno, 126);
  ::close(null_fd);
  ::execve(p.path, p.argv, p.envp);
  int err = errno;
  ChildFail(p.err_w, "execve", err, err == ENOENT ? 127 : 126);
}

int PidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// Has the child exited? Leaves it a zombie (WNOWAIT) so its pid, and with it the process
// group id, cannot be reused before the group is killed.
bool HasExited(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return info.si_pid == pid;
}

// The child leads its own session and group. Confined with a PID namespace, it is the
// supervisor (sandbox/containment.h): its death kills the namespace's init, and with it every
// process the command started, wherever it moved. Unconfined or without the namespace, only
// the group is reached; processes that left it (setsid, setpgid) survive (a documented limit).
void KillGroup(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

int64_t MsUntil(Clock::time_point t) {
  auto d = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return d < 0 ? 0 : d;
}

}  // namespace

Result<RunResult> RunProcess(const SpawnSpec& spec, const RunLimits& limits, CancelToken& cancel,
                             const SpawnedCallback& on_spawned) {
  if (spec.argv.empty()) return MakeError("cannot run an empty command");
  const auto start = Clock::now();
  RunResult result;

  std::string path = FindExecutable(spec.argv[0], spec.env);
  if (path.empty()) {
    result.exit_code = 127;
    result.setup_error = fmt::format("execve: {}: No such file or directory", spec.argv[0]);
    result.output = *result.setup_error + "\n";
    result.total_bytes = result.output.size();
    result.total_lines = 1;
    return result;
  }

  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int out[2], fail[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return MakeError(fmt::format("cannot create the output pipe: {}", std::strerror(errno)));
  }
  Fd out_r(out[0]), out_w(out[1]);
  if (::pipe2(fail, O_CLOEXEC) != 0) {
    return MakeError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  Fd fail_r(fail[0]), fail_w(fail[1]);
  Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull) return MakeError(fmt::format("cannot open /dev/null: {}", std::strerror(errno)));

  WriteWatch watch(spec.sandbox);
  ChildPlan plan{path.c_str(), argv.data(),  envp.data(), spec.cwd.c_str(), devnull.get(),
                 out_w.get(),  fail_w.get(), ::getpid(),  spec.sandbox,     watch.child_fd()};

  // Block signals across fork so no handler of ours runs in the child before it resets them.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  if (pid == 0) RunChild(plan);
  int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return MakeError(fmt::format("fork failed: {}", std::strerror(fork_errno)));

  // No setpgid(pid, pid) from this side: it would make the child a group leader, and its
  // setsid would then fail. KillGroup also kills the pid itself.
  out_w.reset();
  fail_w.reset();
  devnull.reset();
  watch.Started();
  if (on_spawned) on_spawned(pid);

  // EOF on the failure pipe means execve succeeded (close-on-exec).
  ChildFailure failure{};
  ssize_t got;
  do {
    got = ::read(fail_r.get(), &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    KillGroup(pid);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 126;
    failure.step[sizeof failure.step - 1] = '\0';
    result.setup_error = fmt::format("{}: {}", failure.step, std::strerror(failure.err));
    result.output = *result.setup_error + "\n";
    result.total_bytes = result.output.size();
    result.total_lines = 1;
    result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    return result;
  }
  fail_r.reset();

  ::fcntl(out_r.get(), F_SETFL, ::fcntl(out_r.get(), F_GETFL) | O_NONBLOCK);
  Fd pidfd(PidfdOpen(pid));

  OutputCapture capture(limits.max_output_bytes);
  const bool has_deadline = limits.timeout_ms > 0;
  const auto deadline = start + std::chrono::milliseconds(limits.timeout_ms);
  Clock::time_point drain_deadline{};
  bool exited = false, pipe_open = true, killed = false;
  std::string buf(64 * 1024, '\0');

  while (!exited || pipe_open) {
    if (!exited && HasExited(pid)) {
      exited = true;
      drain_deadline =
          Clock::now() + std::chrono::milliseconds(std::max<int64_t>(limits.drain_ms, 0));
    }
    if (exited && (!pipe_open || Clock::now() >= drain_deadline)) break;

    int64_t wait_ms = -1;
    if (exited) wait_ms = MsUntil(drain_deadline);
    if (!killed && has_deadline) {
      int64_t left = MsUntil(deadline);
      wait_ms = wait_ms < 0 ? left : std::min(wait_ms, left);
    }
    if (!exited && !pidfd) wait_ms = wait_ms < 0 ? 10 : std::min<int64_t>(wait_ms, 10);

    pollfd fds[3];
    nfds_t n = 0;
    int out_idx = -1, cancel_idx = -1;
    if (pipe_open) {
      out_idx = static_cast<int>(n);
      fds[n++] = {out_r.get(), POLLIN, 0};
    }
    if (!exited && pidfd) {
      fds[n++] = {pidfd.get(), POLLIN, 0};
    }
    if (!killed && cancel.wake_fd() >= 0) {
      cancel_idx = static_cast<int>(n);
      fds[n++] = {cancel.wake_fd(), POLLIN, 0};
    }
    int rc = ::poll(fds, n, wait_ms > INT32_MAX ? INT32_MAX : static_cast<int>(wait_ms));
    if (rc < 0 && errno != EINTR) {
      KillGroup(pid);
      killed = true;
      break;
    }

    if (out_idx >= 0 && rc > 0 && fds[out_idx].revents != 0) {
      // A bounded number of reads per wake-up, so an endless writer cannot starve the
      // timeout and cancellation checks below.
      for (int reads = 0; reads < 16; ++reads) {
        ssize_t r = ::read(out_r.get(), buf.data(), buf.size());
        if (r > 0) {
          capture.Append(buf.data(), static_cast<size_t>(r));
          if (limits.on_output) limits.on_output(buf.data(), static_cast<size_t>(r));
          if (static_cast<size_t>(r) < buf.size()) break;
          continue;
        }
        if (r == 0 || (errno != EAGAIN && errno != EINTR)) pipe_open = false;
        break;
      }
    }
    // The pidfd only wakes the poll; HasExited at the top of the loop reads the state.

    if (!killed) {
      bool cancelled =
          cancel.cancelled() || (cancel_idx >= 0 && rc > 0 && fds[cancel_idx].revents != 0);
      if (cancelled) {
        result.cancelled = true;
      } else if (has_deadline && !exited && Clock::now() >= deadline) {
        result.timed_out = true;
      }
      if (result.cancelled || result.timed_out) {
        KillGroup(pid);
        killed = true;
      }
    }
  }

  // Whatever still runs in the group (a background job holding the pipe, a daemon) ends with
  // the command; the zombie still reserves the group id here.
  KillGroup(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
    result.exit_code = 128 + result.term_signal;
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  if (result.timed_out) result.exit_code = 124;
  capture.Finish(result);
  result.writes = watch.Finish();
  result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return result;
}

}  // namespace ae::sandbox
