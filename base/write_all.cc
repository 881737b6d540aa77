#include "base/write_all.h"

#include <limits.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace ae {
namespace {

using Clock = std::chrono::steady_clock;

Status Failed(int e, int* err) {
  if (err != nullptr) *err = e;
  return MakeError(std::strerror(e));
}

// Waits until `fd` takes data. False when the grace after a cancel ran out.
bool WaitWritable(int fd, const CancelToken& cancel, Clock::time_point* cancelled_at) {
  for (;;) {
    pollfd fds[2] = {{fd, POLLOUT, 0}, {cancel.wake_fd(), POLLIN, 0}};
    int timeout = -1;
    nfds_t n = 2;
    if (cancel.cancelled()) {
      if (*cancelled_at == Clock::time_point{}) *cancelled_at = Clock::now();
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(
              *cancelled_at + std::chrono::milliseconds(kWriteGraceAfterCancelMs) - Clock::now())
              .count();
      if (left <= 0) return false;
      timeout = static_cast<int>(left);
      n = 1;  // the cancel fd stays readable: wait on the reader alone
    }
    int r = ::poll(fds, n, timeout);
    if (r < 0 && errno != EINTR) return true;  // let write(2) report the problem
    if (r > 0 && fds[0].revents != 0) return true;
  }
}

}  // namespace

Status WriteAll(int fd, std::string_view data, const CancelToken* cancel, int* err) {
  Clock::time_point cancelled_at{};
  while (!data.empty()) {
    size_t chunk = data.size();
    if (cancel != nullptr) {
      if (!WaitWritable(fd, *cancel, &cancelled_at)) return Failed(ETIMEDOUT, err);
      chunk = std::min<size_t>(chunk, PIPE_BUF);
    }
    ssize_t n = ::write(fd, data.data(), chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // a non-blocking descriptor: wait for room (with cancel: above)
        pollfd p{fd, POLLOUT, 0};
        if (cancel == nullptr) ::poll(&p, 1, -1);
        continue;
      }
      return Failed(errno, err);
    }
    if (n == 0) return Failed(EIO, err);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

}  // namespace ae
