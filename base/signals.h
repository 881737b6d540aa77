// Signals and the --timeout watchdog feed the one CancelToken every wait honours.
#pragma once

#include <cstdint>
#include <memory>

#include "base/cancel.h"

namespace ae {

// SIGINT/SIGTERM cancel `token` (kSigint/kSigterm); SIGPIPE is ignored so a closed stdout
// reader cannot kill the run. `token` must outlive the process's use of it.
void InstallSignalHandlers(CancelToken& token);

// Cancels `token` with kTimeout after `timeout_ms`, unless destroyed first.
class Watchdog {
 public:
  Watchdog(CancelToken& token, int64_t timeout_ms);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ae
