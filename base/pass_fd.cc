#include "base/pass_fd.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace ae {

bool SendDescriptor(int socket, int fd, int32_t code) noexcept {
  iovec iov = {&code, sizeof code};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &fd, sizeof(int));
  }
  ssize_t sent = 0;
  while ((sent = ::sendmsg(socket, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return sent == static_cast<ssize_t>(sizeof code);
}

ssize_t ReceiveDescriptor(int socket, int flags, int32_t* code, Fd* fd) {
  *code = 0;
  fd->reset();
  iovec iov = {code, sizeof *code};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = 0;
  while ((n = ::recvmsg(socket, &msg, flags | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); n >= 0 && cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
        cm->cmsg_len == CMSG_LEN(sizeof(int))) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(cm), sizeof received);
      fd->reset(received);
    }
  }
  return n;
}

}  // namespace ae
