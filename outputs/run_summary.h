// The one line human mode ends with: time, model requests, tokens, commands
// run and failed, files changed. Tallied from the events, so it says what the stream said.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "engine/events/events.h"

namespace ae {

// 950 -> "0.9s", 4200 -> "4.2s", 130000 -> "2m10s", 3723000 -> "1h02m03s".
std::string FormatElapsed(int64_t ms);

// Tokens as "tokens used" reports them: new input plus output (cached input is free-ish).
int64_t TokensUsed(const Usage& u);

class RunTally {
 public:
  // Feed every event; only completed items count.
  void Observe(const Event& event);
  // For turn.completed / turn.failed, e.g.
  //   "done in 4.2s: 2 requests, 850 tokens, 3 commands (1 failed), 2 files changed"
  //   "failed (rate_limited) after 4.2s: 1 request, 0 tokens, 0 commands, 0 files changed"
  std::string Line(const Event& end) const;

 private:
  int commands_ = 0;
  int commands_failed_ = 0;
  std::set<std::string> files_;
};

}  // namespace ae
