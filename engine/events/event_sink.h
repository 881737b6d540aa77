// EventSink: where events go. Implemented in outputs/; the engine only calls Emit.
#pragma once

#include "engine/events/events.h"

namespace ae {

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Emit(const Event& event) = 0;
  // Called once when the run is over, after the last event.
  virtual void Close() {}
};

}  // namespace ae
