#include "base/cancel.h"

#include <sys/eventfd.h>
#include <unistd.h>

namespace ae {

CancelToken::CancelToken() : event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void CancelToken::Cancel(CancelReason reason) noexcept {
  int expected = 0;
  if (!reason_.compare_exchange_strong(expected, static_cast<int>(reason))) return;
  if (event_.valid()) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(event_.get(), &one, sizeof one);
  }
}

}  // namespace ae
