// Emitter: the one thread-safe door to the sinks. It numbers items in order of first
// emission and serialises events so lines from parallel tools never interleave.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "engine/events/event_sink.h"

namespace ae {

class Emitter {
 public:
  explicit Emitter(std::vector<EventSink*> sinks) : sinks_(std::move(sinks)) {}

  void Emit(const Event& event);
  // item.started with a fresh id; returns the id for later updates.
  std::string Start(ItemDetails details);
  void Update(const std::string& id, ItemDetails details);
  void Complete(const std::string& id, ItemDetails details);
  // item.completed for an item that has no lifecycle (messages, reasoning, errors).
  std::string CompleteNew(ItemDetails details);

 private:
  std::string NextIdLocked();
  void EmitLocked(const Event& event);

  std::mutex mu_;
  std::vector<EventSink*> sinks_;
  int next_item_ = 0;
};

}  // namespace ae
