#pragma once

#include <cerrno>

namespace ae::sandbox {

// The sandbox is applied as an ordered checklist of steps (nsjail, bubblewrap); a step that
// fails names itself and keeps its errno for the report. Async-signal-safe: it runs in the
// forked child. Returns false so a step can `return FailStep(...)`.
inline bool FailStep(const char* step, const char** failed_step, int* err) noexcept {
  *failed_step = step;
  *err = errno;
  return false;
}

}  // namespace ae::sandbox
