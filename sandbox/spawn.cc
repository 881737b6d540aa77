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
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "base/exec_path.h"
#include "base/fd.h"
#include "base/write_all.h"
#include "sandbox/checklist.h"
#include "sandbox/prepared_sandbox.h"

namespace ae::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

// What the child reports through the close-on-exec pipe when it fails before execve: its errno
// and the step's text, whole (a step names a path, up to PATH_MAX), written until all is out;
// the parent reads to EOF, which comes when the child exits.
[[noreturn]] void ChildFail(int fd, const char* prefix, const char* step, int err,
                            int code) noexcept {
  char report[sizeof(int) + 16 + 4096 + 64];
  size_t n = 0;
  std::memcpy(report, &err, sizeof err);
  n += sizeof err;
  for (const char* part : {prefix, step}) {
    for (size_t i = 0; part[i] != '\0' && n < sizeof report; ++i) report[n++] = part[i];
  }
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::write(fd, report + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  ::_exit(code);
}

// The child's whole life before execve is the checklist (sandbox/checklist.h); a step that
// fails is reported here. Confinement steps read "sandbox: STEP".
[[noreturn]] void RunChild(const ChildPlan& plan, int fail_fd) noexcept {
  StepFailure failure;
  RunChecklist(plan, &failure);  // returns only when a step failed: execve is the last
  if (!failure.sandbox) {
    ChildFail(fail_fd, "", failure.step, failure.err,
              failure.step == kExecStep && failure.err == ENOENT ? 127 : 126);
  }
  ChildFail(fail_fd, "sandbox: ", failure.step, failure.err, 126);
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
bool ChildExited(pid_t pid, siginfo_t* out = nullptr) {
  siginfo_t info{};
  if (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  if (out != nullptr) *out = info;
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

void OutputCapture::Append(const char* data, size_t n) {
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

void OutputCapture::Finish(RunResult& r) const {
  r.total_bytes = total_;
  r.truncated = total_ > head_cap_ + tail_cap_;
  r.head_bytes = head_.size();
  r.output = head_;
  r.output.reserve(r.output.size() + ring_.size());
  r.output.append(ring_, pos_, std::string::npos);
  r.output.append(ring_, 0, pos_);
  r.total_lines = newlines_ + (r.output.empty() || r.output.back() == '\n' ? 0 : 1);
}

Process::Process(pid_t pid, Fd output, Fd input, Fd pidfd)
    : pid_(pid), output_(std::move(output)), input_(std::move(input)), pidfd_(std::move(pidfd)) {}

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      output_(std::move(other.output_)),
      input_(std::move(other.input_)),
      pidfd_(std::move(other.pidfd_)),
      error_(std::move(other.error_)),
      watch_(std::move(other.watch_)),
      network_(std::move(other.network_)),
      reaped_(std::exchange(other.reaped_, true)),
      status_(other.status_) {}

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    int code = 0, sig = 0;
    Reap(&code, &sig);
  }
}

bool Process::HasExited(siginfo_t* info) const {
  if (reaped_) {
    if (info != nullptr) {
      *info = {};
      info->si_code = WIFSIGNALED(status_) ? CLD_KILLED : CLD_EXITED;
      info->si_status = WIFSIGNALED(status_) ? WTERMSIG(status_) : WEXITSTATUS(status_);
    }
    return true;
  }
  return ChildExited(pid_, info);
}

void Process::Kill() const {
  if (!reaped_) KillGroup(pid_);
}

void Process::Signal(int sig) const {
  if (!reaped_) ::kill(-pid_, sig);
}

void Process::Reap(int* exit_code, int* term_signal) {
  if (!reaped_) {
    // Whatever still runs in the group (a background job holding the pipe, a daemon) ends
    // with the command; the zombie still reserves the group id here.
    KillGroup(pid_);
    while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    if (network_) network_->End();
  }
  *term_signal = WIFSIGNALED(status_) ? WTERMSIG(status_) : 0;
  *exit_code = *term_signal != 0    ? 128 + *term_signal
               : WIFEXITED(status_) ? WEXITSTATUS(status_)
                                    : 126;
}

namespace {

// One close-on-exec pipe; `what` names it in the error ("output", "input", "error").
Status OpenPipe(const char* what, Fd* read_end, Fd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return MakeError(fmt::format("cannot create the {} pipe: {}", what, std::strerror(errno)));
  }
  *read_end = Fd(fds[0]);
  *write_end = Fd(fds[1]);
  return {};
}

// A fresh pseudo-terminal of agentexec's own: the master stays here, the slave goes to the
// child. Both close-on-exec; the slave never becomes agentexec's controlling terminal.
Status OpenTerminal(const SpawnSpec& spec, Fd* master, Fd* slave) {
  Fd m(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!m) return MakeError(fmt::format("cannot open a pseudo-terminal: {}", std::strerror(errno)));
  if (::grantpt(m.get()) != 0 || ::unlockpt(m.get()) != 0) {
    return MakeError(fmt::format("cannot unlock the pseudo-terminal: {}", std::strerror(errno)));
  }
  char name[128];
  if (::ptsname_r(m.get(), name, sizeof name) != 0) {
    return MakeError(fmt::format("cannot name the pseudo-terminal: {}", std::strerror(errno)));
  }
  Fd s(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!s) return MakeError(fmt::format("cannot open {}: {}", name, std::strerror(errno)));
  winsize size{};
  size.ws_row = spec.tty_rows;
  size.ws_col = spec.tty_cols;
  if (::ioctl(s.get(), TIOCSWINSZ, &size) != 0) {
    return MakeError(fmt::format("cannot set the terminal size: {}", std::strerror(errno)));
  }
  *master = std::move(m);
  *slave = std::move(s);
  return Status();
}

// Which string of `spec` holds a NUL byte, as the failure's text; environment entries by
// index only, so a value never reaches the model.
std::optional<std::string> FindNulByte(const SpawnSpec& spec) {
  auto has_nul = [](const std::string& s) { return s.find('\0') != std::string::npos; };
  for (size_t i = 0; i < spec.argv.size(); ++i) {
    if (has_nul(spec.argv[i])) return fmt::format("execve: argv[{}] holds a NUL byte", i);
  }
  for (size_t i = 0; i < spec.env.size(); ++i) {
    if (has_nul(spec.env[i])) return fmt::format("execve: environ[{}] holds a NUL byte", i);
  }
  if (has_nul(spec.cwd)) return std::string("chdir: the working directory holds a NUL byte");
  return std::nullopt;
}

RunResult SetupFailure(int exit_code, std::string error, Clock::time_point start) {
  RunResult result;
  result.exit_code = exit_code;
  result.setup_error = std::move(error);
  result.output = *result.setup_error + "\n";
  result.total_bytes = result.output.size();
  result.total_lines = 1;
  result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return result;
}

}  // namespace

namespace {

// A command agentexec refuses before forking: a failure with no time spent.
Spawned Refused(int exit_code, std::string error) {
  Spawned spawned;
  spawned.failure = SetupFailure(exit_code, std::move(error), Clock::now());
  spawned.failure.duration = std::chrono::milliseconds(0);
  return spawned;
}

// The NULL-terminated array execve takes, pointing into `strings`.
std::vector<char*> CStringArray(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Every descriptor a spawn opens before fork: the parent keeps its ends, the child's are
// closed here once it has forked.
struct Channels {
  Fd out_r, out_w, in_r, in_w, err_r, err_w, slave;
  Fd fail_r, fail_w;  // the child's report of a step that failed before execve
  Fd devnull;
  Fd proxy_parent, proxy_child;

  void CloseChildEnds() {
    out_w.reset();
    err_w.reset();
    in_r.reset();
    slave.reset();
    fail_w.reset();
    devnull.reset();
    proxy_child.reset();
  }
};

// The command's 0-2: a pseudo-terminal for both directions, or pipes.
Status OpenStdio(const SpawnSpec& spec, Channels& ch) {
  if (spec.tty) {
    Fd master;
    if (Status s = OpenTerminal(spec, &master, &ch.slave); !s.ok()) return s;
    ch.out_r = std::move(master);
    ch.in_w = Fd(::fcntl(ch.out_r.get(), F_DUPFD_CLOEXEC, 3));
    if (!ch.in_w) {
      return MakeError(fmt::format("cannot dup the terminal: {}", std::strerror(errno)));
    }
    return {};
  }
  if (Status made = OpenPipe("output", &ch.out_r, &ch.out_w); !made.ok()) return made;
  if (spec.stdin_pipe) {
    if (Status made = OpenPipe("input", &ch.in_r, &ch.in_w); !made.ok()) return made;
  }
  if (spec.separate_stderr) {
    if (Status made = OpenPipe("error", &ch.err_r, &ch.err_w); !made.ok()) return made;
  }
  return {};
}

Status OpenFailurePipeAndDevNull(Channels& ch) {
  if (Status made = OpenPipe("failure", &ch.fail_r, &ch.fail_w); !made.ok()) return made;
  ch.devnull = Fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!ch.devnull) {
    return MakeError(fmt::format("cannot open /dev/null: {}", std::strerror(errno)));
  }
  return {};
}

bool Proxied(const SpawnSpec& spec) {
  return spec.sandbox != nullptr && spec.sandbox->network.proxy_port != 0;
}

// The child's list reads only this: built whole in the parent, since the child may not
// allocate.
ChildPlan MakePlan(const SpawnSpec& spec, const char* path, char* const* argv, char* const* envp,
                   const Channels& ch, const WriteWatch* watch) {
  ChildPlan plan;
  plan.spawner = true;
  plan.sandbox = spec.sandbox;
  plan.path = path;
  plan.argv = argv;
  plan.envp = envp;
  plan.cwd = spec.cwd.c_str();
  plan.devnull = ch.devnull.get();
  plan.out_w = ch.out_w.get();
  plan.err_w2 = ch.err_w.get();
  plan.in_r = ch.in_r.get();
  plan.tty = ch.slave.get();
  plan.parent = ::getpid();
  plan.watch_fd = watch != nullptr ? watch->child_fd() : -1;
  plan.watch_program = plan.watch_fd >= 0 ? watch->program() : nullptr;
  plan.proxy_fd = ch.proxy_child.get();
  return plan;
}

// Block signals across fork so no handler of ours runs in the child before it resets them.
Result<pid_t> ForkChild(const ChildPlan& plan, int fail_fd) {
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  if (pid == 0) RunChild(plan, fail_fd);
  int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return MakeError(fmt::format("fork failed: {}", std::strerror(fork_errno)));
  return pid;
}

// EOF at once on the failure pipe means execve succeeded (close-on-exec); a report is read
// to EOF, which comes when the child that failed exits.
std::string ReadFailureReport(int fd) {
  std::string report;
  char chunk[4096];
  for (;;) {
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    report.append(chunk, static_cast<size_t>(got));
  }
  return report;
}

// The child reported a failed step: reap it, end its group, and say which step and why.
void RecordChildFailure(pid_t pid, const std::string& report, Clock::time_point start,
                        Spawned& spawned) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  KillGroup(pid);
  int err = 0;
  std::memcpy(&err, report.data(), sizeof err);
  spawned.failed_step = report.substr(sizeof err);
  spawned.failed_errno = err;
  spawned.failure =
      SetupFailure(WIFEXITED(status) ? WEXITSTATUS(status) : 126,
                   fmt::format("{}: {}", spawned.failed_step, std::strerror(err)), start);
}

void AttachProcess(const SpawnSpec& spec, pid_t pid, Channels& ch,
                   std::unique_ptr<WriteWatch> watch, Spawned& spawned) {
  ::fcntl(ch.out_r.get(), F_SETFL, ::fcntl(ch.out_r.get(), F_GETFL) | O_NONBLOCK);
  spawned.process.emplace(pid, std::move(ch.out_r), std::move(ch.in_w), Fd(PidfdOpen(pid)));
  spawned.process->SetError(std::move(ch.err_r));
  spawned.process->SetWatch(std::move(watch));
  if (Proxied(spec) && spec.attach_network) {
    // Sent before execve, so it is queued by now; a listener that never came leaves the
    // command's namespace without one: no network, which is closed, not open.
    if (Fd listener = ReceiveListener(ch.proxy_parent.get())) {
      spawned.process->SetNetwork(spec.attach_network(std::move(listener)));
    }
  }
}

}  // namespace

Result<Spawned> Spawn(const SpawnSpec& spec, const SpawnedCallback& on_spawned) {
  if (spec.argv.empty()) return MakeError("cannot run an empty command");
  const auto start = Clock::now();

  // The kernel reads each string up to its first NUL: `echo hi\0; rm x` would run `echo hi`
  // while the item shows the whole text. Refused like any other command that cannot start.
  if (std::optional<std::string> nul = FindNulByte(spec)) return Refused(126, *nul);
  std::string path = FindExecutable(spec.argv[0], spec.env);
  if (path.empty()) {
    return Refused(127, fmt::format("execve: {}: No such file or directory", spec.argv[0]));
  }
  std::vector<char*> argv = CStringArray(spec.argv);
  std::vector<char*> envp = CStringArray(spec.env);

  Channels ch;
  if (Status made = OpenStdio(spec, ch); !made.ok()) return made.error();
  if (Status made = OpenFailurePipeAndDevNull(ch); !made.ok()) return made.error();
  std::unique_ptr<WriteWatch> watch;
  if (spec.watch_writes || Proxied(spec)) {
    watch = std::make_unique<WriteWatch>(spec.sandbox, spec.watch_writes);
  }
  if (Proxied(spec)) {
    if (Status made = MakeListenerChannel(&ch.proxy_parent, &ch.proxy_child); !made.ok()) {
      return made.error();
    }
  }
  const ChildPlan plan = MakePlan(spec, path.c_str(), argv.data(), envp.data(), ch, watch.get());
  Result<pid_t> pid = ForkChild(plan, ch.fail_w.get());
  if (!pid.ok()) return pid.error();

  // No setpgid(pid, pid) from this side: it would make the child a group leader, and its
  // setsid would then fail. KillGroup also kills the pid itself.
  ch.CloseChildEnds();
  if (watch) watch->Started();
  if (on_spawned) on_spawned(*pid);

  Spawned spawned;
  if (std::string report = ReadFailureReport(ch.fail_r.get()); report.size() >= sizeof(int)) {
    RecordChildFailure(*pid, report, start, spawned);
    return spawned;
  }
  AttachProcess(spec, *pid, ch, std::move(watch), spawned);
  return spawned;
}

namespace {

// RunProcess's wait for the command: its output read as it comes, its exit, the timeout and
// cancellation, until it has exited and its output is drained (or the drain time is up).
class Wait {
 public:
  Wait(Process& proc, const RunLimits& limits, CancelToken& cancel, Clock::time_point start,
       OutputCapture& capture, RunResult& result)
      : proc_(proc),
        limits_(limits),
        cancel_(cancel),
        capture_(capture),
        result_(result),
        has_deadline_(limits.timeout_ms > 0),
        deadline_(start + std::chrono::milliseconds(limits.timeout_ms)),
        error_(proc.TakeError()),
        buf_(64 * 1024, '\0') {
    if (error_) {
      const int flags = ::fcntl(error_.get(), F_GETFL);
      if (flags >= 0) ::fcntl(error_.get(), F_SETFL, flags | O_NONBLOCK);
    }
  }

  void Run() {
    while (!exited_ || pipe_open_ || error_) {
      NoteExit();
      if (exited_ && ((!pipe_open_ && !error_) || Clock::now() >= drain_deadline_)) break;
      const int64_t wait_ms = PollTimeoutMs();
      // Output, stderr, the pidfd, the token and the stop descriptors.
      std::vector<pollfd> fds;
      int out_idx = -1, err_idx = -1;
      if (pipe_open_) {
        out_idx = static_cast<int>(fds.size());
        fds.push_back({proc_.output_fd(), POLLIN, 0});
      }
      if (error_) {
        err_idx = static_cast<int>(fds.size());
        fds.push_back({error_.get(), POLLIN, 0});
      }
      if (!exited_ && proc_.pidfd() >= 0) fds.push_back({proc_.pidfd(), POLLIN, 0});
      const size_t first_stop = fds.size();
      if (!stopping_ && cancel_.wake_fd() >= 0) fds.push_back({cancel_.wake_fd(), POLLIN, 0});
      if (!stopping_) {
        for (int fd : limits_.stop_fds) fds.push_back({fd, POLLIN, 0});
      }
      int rc = ::poll(fds.data(), fds.size(),
                      wait_ms > INT32_MAX ? INT32_MAX : static_cast<int>(wait_ms));
      if (rc < 0 && errno != EINTR) {
        proc_.Kill();
        killed_ = true;
        break;
      }
      if (out_idx >= 0 && rc > 0 && fds[out_idx].revents != 0) ReadOutput();
      if (err_idx >= 0 && rc > 0 && fds[err_idx].revents != 0) ReadError();
      bool stop_woke = false;
      for (size_t i = first_stop; rc > 0 && i < fds.size(); ++i) {
        stop_woke = stop_woke || fds[i].revents != 0;
      }
      // The pidfd only wakes the poll; NoteExit at the top of the loop reads the state.
      if (!killed_) StopIfCancelledOrLate(stop_woke);
    }
  }

 private:
  void NoteExit() {
    if (exited_ || !proc_.HasExited()) return;
    exited_ = true;
    drain_deadline_ =
        Clock::now() + std::chrono::milliseconds(std::max<int64_t>(limits_.drain_ms, 0));
  }

  // -1: no limit. Without a pidfd, the exit is polled for every 10 ms.
  int64_t PollTimeoutMs() const {
    int64_t wait_ms = -1;
    auto at_most = [&wait_ms](int64_t ms) { wait_ms = wait_ms < 0 ? ms : std::min(wait_ms, ms); };
    if (exited_) at_most(MsUntil(drain_deadline_));
    if (!killed_ && has_deadline_) at_most(MsUntil(deadline_));
    if (!killed_ && stopping_) at_most(MsUntil(kill_at_));
    if (!exited_ && proc_.pidfd() < 0) at_most(10);
    return wait_ms;
  }

  // A bounded number of reads per wake-up, so an endless writer cannot starve the timeout
  // and cancellation checks.
  void ReadOutput() {
    for (int reads = 0; reads < 16; ++reads) {
      ssize_t r = ::read(proc_.output_fd(), buf_.data(), buf_.size());
      if (r > 0) {
        capture_.Append(buf_.data(), static_cast<size_t>(r));
        if (limits_.on_output) limits_.on_output(buf_.data(), static_cast<size_t>(r));
        if (static_cast<size_t>(r) < buf_.size()) break;
        continue;
      }
      // EOF; EIO is a terminal's end (every slave side closed).
      if (r == 0 || (errno != EAGAIN && errno != EINTR)) pipe_open_ = false;
      break;
    }
  }

  void ReadError() {
    for (int reads = 0; reads < 16; ++reads) {
      ssize_t r = ::read(error_.get(), buf_.data(), buf_.size());
      if (r > 0) {
        if (limits_.on_error) limits_.on_error(buf_.data(), static_cast<size_t>(r));
        if (static_cast<size_t>(r) < buf_.size()) break;
        continue;
      }
      if (r == 0 || (errno != EAGAIN && errno != EINTR)) error_.reset();
      break;
    }
  }

  // Cancelled (the token, or a stop descriptor): SIGTERM first when the caller grants a
  // grace, then SIGKILL once it is over. Late: SIGKILL at once.
  void StopIfCancelledOrLate(bool stop_woke) {
    const Clock::time_point now = Clock::now();
    if (!stopping_ && (cancel_.cancelled() || stop_woke)) {
      result_.cancelled = true;
      stopping_ = true;
      if (limits_.term_grace_ms > 0) {
        proc_.Signal(SIGTERM);
        kill_at_ = now + std::chrono::milliseconds(limits_.term_grace_ms);
      } else {
        kill_at_ = now;
      }
    } else if (has_deadline_ && !exited_ && !result_.cancelled && now >= deadline_) {
      result_.timed_out = true;
      stopping_ = true;
      kill_at_ = now;
    }
    if (stopping_ && now >= kill_at_) {
      proc_.Kill();
      killed_ = true;
    }
  }

  Process& proc_;
  const RunLimits& limits_;
  CancelToken& cancel_;
  OutputCapture& capture_;
  RunResult& result_;
  const bool has_deadline_;
  const Clock::time_point deadline_;
  Clock::time_point drain_deadline_{};
  Clock::time_point kill_at_{};
  bool exited_ = false, pipe_open_ = true, killed_ = false, stopping_ = false;
  Fd error_;  // stderr's own pipe (SpawnSpec::separate_stderr); closed at its end
  std::string buf_;
};

}  // namespace

Result<RunResult> RunProcess(const SpawnSpec& spec, const RunLimits& limits, CancelToken& cancel,
                             const SpawnedCallback& on_spawned) {
  const auto start = Clock::now();
  Result<Spawned> spawned = Spawn(spec, on_spawned);
  if (!spawned.ok()) return spawned.error();
  if (!spawned->process) return std::move(spawned->failure);
  Process& proc = *spawned->process;
  RunResult result;
  if (spec.stdin_pipe) {
    // All of it, then EOF, before any output is read: for a command that reads its input to
    // the end first (agentexec reads its prompt so). One that writes a pipe's worth before it
    // has read everything waits until cancellation or the timeout ends it.
    Fd input = proc.TakeInput();
    if (!limits.input.empty()) (void)WriteAll(input.get(), limits.input, &cancel);
  }
  OutputCapture capture(limits.max_output_bytes);
  Wait(proc, limits, cancel, start, capture, result).Run();

  proc.Reap(&result.exit_code, &result.term_signal);
  if (result.timed_out) result.exit_code = 124;
  capture.Finish(result);
  result.writes = proc.FinishWatch();
  result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return result;
}

}  // namespace ae::sandbox
