// --progress: while a command runs, item.updated carries its output so far, at
// most once per interval, so a --json consumer sees a long command is alive. Off by default,
// so codex consumers see exactly codex's stream.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/events/result_record.h"

namespace ae {

inline constexpr int64_t kProgressIntervalMs = 3000;

class CommandProgress {
 public:
  using Publish = std::function<void(const std::string& output_so_far)>;
  // The first update comes `interval_ms` after construction (the command's start).
  CommandProgress(int64_t interval_ms, MonotonicMs now, Publish publish);

  // A chunk of output arrived; publishes when the interval has passed since the last update.
  void OnOutput(const char* data, size_t n);

  // Kept for updates: the last this many bytes (the completed item carries the whole output).
  static constexpr size_t kMaxBytes = 64 * 1024;

 private:
  int64_t interval_ms_;
  MonotonicMs now_;
  Publish publish_;
  int64_t next_ms_;
  std::string so_far_;
};

}  // namespace ae
