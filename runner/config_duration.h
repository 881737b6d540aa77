// Durations as people type them: "90s", "10m", "1h30m", "500ms", or a bare number of seconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace ae {

// Milliseconds. Units h, m, s, ms, combined largest first ("1h30m", "2m15s"); a bare integer
// is seconds. Zero and negative durations are errors: a limit of nothing is a mistake.
Result<int64_t> ParseDurationMs(std::string_view text);

// The inverse, shortest exact form: 5400000 -> "1h30m", 1500 -> "1s500ms", 0 -> "0s".
std::string FormatDurationMs(int64_t ms);

}  // namespace ae
