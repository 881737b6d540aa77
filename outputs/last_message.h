// The final message: the last agent_message of the turn. The runner prints it on stdout in
// human mode and writes it to -o FILE (without a trailing newline).
#pragma once

#include <mutex>
#include <string>

#include "base/result.h"
#include "engine/event_sink.h"

namespace ae {

class LastMessageSink : public EventSink {
 public:
  void Emit(const Event& event) override;
  std::string text() const;
  bool has_message() const;

 private:
  mutable std::mutex mu_;
  std::string text_;
  bool has_ = false;
};

// Creates the parent directories of `path` and checks that a file can be written there,
// before the turn starts, so a bad -o fails fast (exit 5) instead of after the work.
Status PrepareOutputFile(const std::string& path);
// Writes `text` to `path` atomically (temp file + rename).
Status WriteOutputFile(const std::string& path, const std::string& text);

}  // namespace ae
