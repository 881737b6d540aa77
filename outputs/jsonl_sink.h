// JsonlSink: one compact JSON object per line, field order fixed, strings
// always valid UTF-8 (base/json.h writes every line).
#pragma once

#include <string>
#include <utility>

#include "base/cancel.h"
#include "engine/events/event_sink.h"

namespace ae {

class JsonlSink : public EventSink {
 public:
  // `cancel` (optional) is the run's token: a write that fails ends the run with
  // CancelReason::kOutputFailed, and once the run is cancelled a reader that does not take a
  // line within kWriteGraceAfterCancelMs is given up on (base/write_all.h).
  // `name` says where the lines go, in the error ("stdout", "--events-file 'F'").
  explicit JsonlSink(int fd, CancelToken* cancel = nullptr, std::string name = "stdout")
      : fd_(fd), cancel_(cancel), name_(std::move(name)) {}
  void Emit(const Event& event) override;

  // True once a line could not be written; error() says why.
  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }

 private:
  int fd_;
  CancelToken* cancel_;
  std::string name_;
  bool failed_ = false;
  std::string error_;
};

// The line for one event, without the newline; empty for events JSONL does not carry.
std::string EventToJson(const Event& event);

}  // namespace ae
