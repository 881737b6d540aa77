// CancelToken: one flag that every wait in the program honours. Set from a signal handler
// (async-signal-safe), from the --timeout watchdog, or from limits; waiters poll() on
// wake_fd() next to their own descriptors so they wake at once.
#pragma once

#include <atomic>

#include "base/fd.h"

namespace ae {

// kOutputFailed: stdout (the event stream) cannot be written, e.g. its reader is gone.
enum class CancelReason : int { kNone = 0, kSigint, kSigterm, kTimeout, kLimit, kOutputFailed };

class CancelToken {
 public:
  CancelToken();
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Async-signal-safe: an atomic store and a write(2) to an eventfd. The first reason wins.
  void Cancel(CancelReason reason) noexcept;
  bool cancelled() const noexcept { return reason_.load(std::memory_order_acquire) != 0; }
  CancelReason reason() const noexcept {
    return static_cast<CancelReason>(reason_.load(std::memory_order_acquire));
  }
  // Readable once cancelled (level-triggered: never drained).
  int wake_fd() const { return event_.get(); }

 private:
  std::atomic<int> reason_{0};
  Fd event_;
};

}  // namespace ae
