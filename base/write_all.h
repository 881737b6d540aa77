// WriteAll: the one loop that writes a whole buffer to a descriptor (stdout lines, the human
// view, session files, -o, the runner). Short writes and EINTR are retried; every other error
// is returned, so a full disk or a vanished reader is never silent.
#pragma once

#include <string_view>

#include "base/cancel.h"
#include "base/result.h"

namespace ae {

// How long a write may still wait for a reader once `cancel` has fired: enough for a reader
// that is merely slow to take turn.failed, short enough that SIGTERM ends the run within 1 s.
inline constexpr int kWriteGraceAfterCancelMs = 500;

// Writes all of `data`. Without `cancel` the write may block as long as the descriptor does
// (files). With `cancel`, it never blocks for long in write(2): it waits for POLLOUT (or the
// cancel) in poll(2) and writes at most PIPE_BUF bytes per call, which a pipe that polled
// writable always takes at once; after `cancel` fires it gives up once
// kWriteGraceAfterCancelMs have passed without the reader taking the data. We poll rather than
// set O_NONBLOCK because stdout's file description is shared with the parent shell and
// whatever else writes to it, and a writer thread would still need this same bounded give-up.
// Errors name errno's text ("Broken pipe", "No space left on device"); `*err` gets errno.
Status WriteAll(int fd, std::string_view data, const CancelToken* cancel = nullptr,
                int* err = nullptr);

}  // namespace ae
