// JsonlSink: CONTRACT §3. One compact JSON object per line, field order fixed, strings
// always valid UTF-8, one write(2) per line so a reader never sees half a line.
#pragma once

#include <string>

#include "engine/event_sink.h"

namespace ae {

class JsonlSink : public EventSink {
 public:
  explicit JsonlSink(int fd) : fd_(fd) {}
  void Emit(const Event& event) override;

 private:
  int fd_;
  bool broken_ = false;  // the reader went away (EPIPE): stop writing, keep running
};

// The line for one event, without the newline; empty for events JSONL does not carry.
std::string EventToJson(const Event& event);

}  // namespace ae
