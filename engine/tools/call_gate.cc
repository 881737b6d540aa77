#include "engine/tools/call_gate.h"

namespace ae {

CallGate::CallGate(const std::vector<bool>& parallel_safe)
    : wait_for_(parallel_safe.size()), done_(parallel_safe.size(), false) {
  // A reader waits for the writer before it (and so for everything before that writer); a
  // writer waits for every call before it.
  size_t last_writer_end = 0;  // calls [0, last_writer_end) end with the latest writer
  for (size_t i = 0; i < parallel_safe.size(); ++i) {
    if (parallel_safe[i]) {
      wait_for_[i] = last_writer_end;
    } else {
      wait_for_[i] = i;
      last_writer_end = i + 1;
    }
  }
}

std::optional<size_t> CallGate::Next() {
  std::unique_lock lock(mu_);
  if (next_ >= wait_for_.size()) return std::nullopt;
  const size_t i = next_++;
  cv_.wait(lock, [&] { return done_upto_ >= wait_for_[i]; });
  return i;
}

void CallGate::Done(size_t i) {
  {
    std::lock_guard lock(mu_);
    done_[i] = true;
    while (done_upto_ < done_.size() && done_[done_upto_]) ++done_upto_;
  }
  cv_.notify_all();
}

}  // namespace ae
