#include "sandbox/containment.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/child.h"
#include "sandbox/step.h"

namespace ae::sandbox {
namespace {

// The init cannot die of the command's signal (pid 1 ignores signals it has no handler for),
// so it writes the signal number here for the supervisor to re-raise. The init's end; -1
// elsewhere. A plain global: the child is single-threaded.
int g_report_w = -1;

void CloseRange(unsigned first, unsigned last) noexcept {
  if (first > last) return;
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, first, last, 0u) == 0) return;
#endif
  for (unsigned fd = first; fd <= last && fd < 65536; ++fd) ::close(static_cast<int>(fd));
}

// A supervisor or init must not hold agentexec's descriptors for the command's lifetime: the
// spawner waits for EOF on its failure pipe (closed on exec), and pipes to other children
// (MCP servers) must see EOF when agentexec closes them. Keeps 0-2 and `keep`.
void CloseAllBut(int keep) noexcept {
  if (keep < 3) {
    CloseRange(3, ~0u);
    return;
  }
  CloseRange(3, static_cast<unsigned>(keep) - 1);
  CloseRange(static_cast<unsigned>(keep) + 1, ~0u);
}

[[noreturn]] void DieBySignal(int sig) noexcept {
  struct rlimit none = {0, 0};
  ::setrlimit(RLIMIT_CORE, &none);  // the command's core dump, if any, was its own
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::kill(::getpid(), sig);
  ::_exit(128 + sig);  // a signal whose default is to continue or stop
}

// FollowChild with the init's report pipe: `report_in` (the supervisor's end) may carry the
// signal that ended the command; `report_out` (the init's end) passes one on.
[[noreturn]] void Follow(pid_t child, int report_in, int report_out) noexcept {
  int status = 0;
  for (;;) {
    pid_t got = ::waitpid(-1, &status, 0);
    if (got == child) break;
    if (got < 0 && errno != EINTR) ::_exit(126);
  }
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  unsigned char byte = 0;
  if (sig == 0 && report_in >= 0 && ::read(report_in, &byte, 1) == 1) sig = byte;
  if (sig != 0) {
    if (report_out < 0) DieBySignal(sig);
    byte = static_cast<unsigned char>(sig);
    [[maybe_unused]] ssize_t n = ::write(report_out, &byte, 1);
    ::_exit(128 + sig);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 126);
}

}  // namespace

void FollowChild(pid_t child) noexcept {
  Follow(child, -1, -1);
}

bool ForkNamespaceInit(const char** failed_step, int* err) noexcept {
  int report[2];
  if (::pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0) {
    return FailStep("pipe for the namespace init", failed_step, err);
  }
  pid_t pid = ::fork();
  if (pid < 0) return FailStep("fork the namespace init", failed_step, err);
  if (pid == 0) {
    ::close(report[0]);
    g_report_w = report[1];
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
      return FailStep("prctl(PR_SET_PDEATHSIG) in the init", failed_step, err);
    }
    // The supervisor may have died before the signal was armed; then no one holds the read
    // end and the pipe reports an error. (getppid() says 0 across the namespace boundary.)
    pollfd p = {report[1], POLLOUT, 0};
    if (::poll(&p, 1, 0) < 0 || (p.revents & POLLERR) != 0) ::_exit(126);
    return true;
  }
  ::close(report[1]);
  CloseAllBut(report[0]);
  Follow(pid, report[0], -1);
}

bool ForkCommandUnderInit(int terminal_fd, const char** failed_step, int* err) noexcept {
  pid_t pid = ::fork();
  if (pid < 0) return FailStep("fork the command under the init", failed_step, err);
  if (pid == 0) {
    if (g_report_w >= 0) ::close(g_report_w);
    g_report_w = -1;
    return EnterNewSession(terminal_fd, failed_step, err);
  }
  // Nothing may reach into the init (/proc/1/mem, /proc/1/fd) from the command's side.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  CloseAllBut(g_report_w);
  Follow(pid, -1, g_report_w);
}

namespace {

bool LeadNewSession(const char** failed_step, int* err) noexcept {
  // Already leading a session without a terminal (the spawner's child): nothing to do.
  if (::getsid(0) == ::getpid()) {
    int tty = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (tty < 0 && errno == ENXIO) return true;
    if (tty >= 0) ::close(tty);
  }
  if (::setsid() >= 0) return true;
  if (errno != EPERM) return FailStep("setsid", failed_step, err);
  // A process group or session leader (e.g. `agentexec sandbox` started by a shell).
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return FailStep("fork for setsid", failed_step, err);
  if (pid == 0) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
      return FailStep("prctl(PR_SET_PDEATHSIG)", failed_step, err);
    }
    if (::getppid() != parent) ::_exit(126);
    if (::setsid() < 0) return FailStep("setsid", failed_step, err);
    return true;
  }
  CloseAllBut(-1);
  FollowChild(pid);
}

}  // namespace

bool EnterNewSession(int terminal_fd, const char** failed_step, int* err) noexcept {
  if (!LeadNewSession(failed_step, err)) return false;
  return terminal_fd < 0 || TakeControllingTerminal(terminal_fd, failed_step, err);
}

}  // namespace ae::sandbox
