#include "engine/events/command_progress.h"

namespace ae {

CommandProgress::CommandProgress(int64_t interval_ms, MonotonicMs now, Publish publish)
    : interval_ms_(interval_ms),
      now_(std::move(now)),
      publish_(std::move(publish)),
      next_ms_(now_() + interval_ms) {}

void CommandProgress::OnOutput(const char* data, size_t n) {
  so_far_.append(data, n);
  if (so_far_.size() > kMaxBytes) so_far_.erase(0, so_far_.size() - kMaxBytes);
  const int64_t now = now_();
  if (now < next_ms_) return;
  next_ms_ = now + interval_ms_;
  // A chunk may end inside a UTF-8 sequence; the sink replaces what is invalid.
  publish_(so_far_);
}

}  // namespace ae
