// Durations: the one parser for durations people type ("90s", "10m", "1h30m", "500ms", or a
// bare number of seconds) and the one clamp every duration goes through before anything waits
// on it (flags, config, the model's tool arguments).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace ae {

// The longest anything waits: ten years. Longer limits are clamped to it, because
// steady_clock counts nanoseconds in 64 bits (292 years): `now() + 9999999h` overflows and the
// limit would fire at once.
inline constexpr int64_t kMaxDurationMs = int64_t{10} * 365 * 24 * 3600 * 1000;

// Milliseconds. Units h, m, s, ms, combined largest first ("1h30m", "2m15s"); a bare integer
// is seconds. Zero and negative durations are errors: a limit of nothing is a mistake.
// Values above kMaxDurationMs are clamped to it.
Result<int64_t> ParseDurationMs(std::string_view text);

// A configured limit in ms: <= 0 stays 0 ("no limit"), longer than kMaxDurationMs is clamped.
int64_t ClampDurationMs(int64_t ms);

// A limit the model asks for (any JSON number, in ms) against the configured one: the model may
// lower the limit, never raise it above `configured_ms` or switch it off. Anything that is not
// a positive finite number (0, -1, NaN) means the configured limit; a positive value under 1 ms
// is 1 ms. With no configured limit (<= 0) a positive request applies, clamped.
int64_t LowerLimitMs(double requested_ms, int64_t configured_ms);

// The inverse, shortest exact form: 5400000 -> "1h30m", 1500 -> "1s500ms", 0 -> "0s".
std::string FormatDurationMs(int64_t ms);

}  // namespace ae
