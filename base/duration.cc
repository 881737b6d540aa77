#include "base/duration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ae {
namespace {

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;

Error BadDuration(std::string_view text) {
  return MakeError(fmt::format(
      "invalid duration '{}': expected e.g. 90s, 10m, 1h30m, 500ms or a number of seconds", text));
}

}  // namespace

Result<int64_t> ParseDurationMs(std::string_view text) {
  if (text.empty()) return BadDuration(text);
  int64_t total = 0;
  int last_rank = 4;  // units must come largest first, each at most once
  size_t i = 0;
  bool bare = true;
  while (i < text.size()) {
    size_t digits = i;
    int64_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n > std::numeric_limits<int64_t>::max() / 10 / kHour) return BadDuration(text);
      n = n * 10 + (text[i] - '0');
      ++i;
    }
    if (i == digits) return BadDuration(text);
    int64_t unit;
    int rank;
    if (text.substr(i, 2) == "ms") {
      unit = 1, rank = 0, i += 2;
    } else if (i < text.size() && text[i] == 'h') {
      unit = kHour, rank = 3, ++i;
    } else if (i < text.size() && text[i] == 'm') {
      unit = kMinute, rank = 2, ++i;
    } else if (i < text.size() && text[i] == 's') {
      unit = kSecond, rank = 1, ++i;
    } else if (i == text.size() && bare) {
      unit = kSecond, rank = 1;  // "90" alone means seconds
    } else {
      return BadDuration(text);
    }
    if (rank >= last_rank) return BadDuration(text);
    last_rank = rank;
    bare = false;
    total += n * unit;
  }
  if (total <= 0) {
    return MakeError(fmt::format("invalid duration '{}': must be greater than zero", text));
  }
  return ClampDurationMs(total);
}

int64_t ClampDurationMs(int64_t ms) {
  if (ms <= 0) return 0;
  return ms > kMaxDurationMs ? kMaxDurationMs : ms;
}

int64_t LowerLimitMs(double requested_ms, int64_t configured_ms) {
  const int64_t configured = ClampDurationMs(configured_ms);
  if (!(requested_ms > 0)) return configured;  // 0, negative, NaN: keep the user's limit
  // Compare as doubles first: 1e300 or 9.2e18 must not be converted to int64 (undefined).
  const double ceiling = static_cast<double>(configured > 0 ? configured : kMaxDurationMs);
  if (requested_ms >= ceiling) return configured > 0 ? configured : kMaxDurationMs;
  return std::max<int64_t>(1, static_cast<int64_t>(requested_ms));
}

std::string FormatDurationMs(int64_t ms) {
  if (ms <= 0) return "0s";
  std::string out;
  const struct {
    int64_t size;
    const char* name;
  } units[] = {{kHour, "h"}, {kMinute, "m"}, {kSecond, "s"}, {1, "ms"}};
  for (const auto& u : units) {
    if (ms >= u.size) {
      out += fmt::format("{}{}", ms / u.size, u.name);
      ms %= u.size;
    }
  }
  return out;
}

}  // namespace ae
