#include "sandbox/network.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/pass_fd.h"
#include "sandbox/step.h"

namespace ae::sandbox {

bool EnterNetworkNamespace(const NetworkPlan& plan, int send_fd, const char** step,
                           int* err) noexcept {
  if (plan.proxy_port == 0) return true;
  if (::unshare(CLONE_NEWNET) != 0) return FailStep("create a network namespace", step, err);
  // A new namespace's `lo` is down: 127.0.0.1 is unreachable until it is up.
  int ctl = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (ctl < 0) return FailStep("bring up lo", step, err);
  ifreq ifr = {};
  std::memcpy(ifr.ifr_name, "lo", 3);
  bool up = ::ioctl(ctl, SIOCGIFFLAGS, &ifr) == 0;
  if (up) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    up = ::ioctl(ctl, SIOCSIFFLAGS, &ifr) == 0;
  }
  const int up_errno = errno;
  ::close(ctl);
  if (!up) {
    errno = up_errno;
    return FailStep("bring up lo", step, err);
  }
  if (send_fd < 0) return true;
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return FailStep("listen on the proxy's port", step, err);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(plan.proxy_port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 128) != 0) {
    const int saved = errno;
    ::close(listener);
    errno = saved;
    return FailStep("listen on the proxy's port", step, err);
  }
  const bool sent = SendDescriptor(send_fd, listener, 0);
  const int send_errno = errno;
  ::close(listener);
  ::close(send_fd);
  if (!sent) {
    errno = send_errno;
    return FailStep("hand the proxy's port to agentexec", step, err);
  }
  return true;
}

Status MakeListenerChannel(Fd* parent, Fd* child) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return MakeError(fmt::format("cannot create the proxy's channel: {}", std::strerror(errno)));
  }
  parent->reset(fds[0]);
  child->reset(fds[1]);
  return {};
}

Fd ReceiveListener(int parent) {
  int32_t code = 0;
  Fd listener;
  if (ReceiveDescriptor(parent, MSG_DONTWAIT, &code, &listener) <= 0 || code != 0) return {};
  return listener;
}

}  // namespace ae::sandbox
