#include "base/child.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace ae {

void ResetSignalsInChild() noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

namespace {

bool TieToParent(pid_t parent, int orphan_exit_code, const char** step, int* err) noexcept {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    *step = "prctl(PR_SET_PDEATHSIG)";
    *err = errno;
    return false;
  }
  if (::getppid() != parent) ::_exit(orphan_exit_code);
  return true;
}

}  // namespace

bool EnterOwnGroupTiedToParent(pid_t parent, int orphan_exit_code, const char** step,
                               int* err) noexcept {
  if (::setpgid(0, 0) != 0) {
    *step = "setpgid";
    *err = errno;
    return false;
  }
  return TieToParent(parent, orphan_exit_code, step, err);
}

bool EnterOwnSessionTiedToParent(pid_t parent, int orphan_exit_code, const char** step,
                                 int* err) noexcept {
  if (::setsid() < 0) {
    *step = "setsid";
    *err = errno;
    return false;
  }
  return TieToParent(parent, orphan_exit_code, step, err);
}

bool TakeControllingTerminal(int fd, const char** step, int* err) noexcept {
  if (::ioctl(fd, TIOCSCTTY, 0) != 0) {
    *step = "ioctl(TIOCSCTTY)";
    *err = errno;
    return false;
  }
  return true;
}

void CloseOnExecFrom3() noexcept {
#ifdef SYS_close_range
  ::syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
#endif
}

}  // namespace ae
