// Shared by the libFuzzer harnesses: the list of known bugs the harnesses steer clear of
// until their fixes land, an invariant check that aborts with a message (libFuzzer saves the
// input), and the JSON checks every harness applies to what it produced.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/utf8.h"

namespace ae::fuzz {

// --- Pending fixes ---------------------------------------------------------------
// While a flag is true the harnesses skip inputs that trip that known bug, so the smoke pass
// in `make test` guards everything else. Reproducers live in tests/fuzz/<harness>/known/;
// after merging a fix, set its flag to false and run `make fuzz` (and the known/ inputs).
inline constexpr bool kPendingJsonDepth = false;     // robust: iterative JSON, bounded depth
inline constexpr bool kPendingJsonNumbers = false;   // robust: numbers that cannot be written
inline constexpr bool kPendingRawUtf8 = false;       // robust: raw JSON strings made valid UTF-8
inline constexpr bool kPendingSseSplitBom = false;   // engine/model/sse.cc: a BOM cut across reads
inline constexpr bool kPendingPatchNulPath = false;  // writes: refuse a patch path holding NUL
// ---------------------------------------------------------------------------------------------

[[noreturn]] inline void Fail(const std::string& what, std::string_view detail = {}) {
  std::fprintf(stderr, "invariant violated: %s\n%.*s\n", what.c_str(),
               static_cast<int>(detail.size() > 2000 ? 2000 : detail.size()), detail.data());
  std::abort();
}

inline void Check(bool ok, const std::string& what, std::string_view detail = {}) {
  if (!ok) Fail(what, detail);
}

// A scratch directory made once per process from `tmpl` (mkdtemp, "...XXXXXX") and removed
// when the process exits: make test runs the harnesses, and tests leave nothing in /tmp.
inline const std::string& ScratchDir(const char* tmpl) {
  static const std::string dir = [tmpl] {
    std::string path = tmpl;
    if (!::mkdtemp(path.data())) std::abort();
    return path;
  }();
  static const int registered = std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  });
  (void)registered;
  return dir;
}

// True when `input` would trip a bug listed above as pending: deep nesting, a number with an
// exponent (1.8e308 overflows a double), or invalid UTF-8.
inline bool HitsPendingBug(std::string_view input) {
  if (kPendingRawUtf8 && !IsValidUtf8(input)) return true;
  int depth = 0, max_depth = 0;
  bool exponent = false;
  for (size_t i = 0; i < input.size(); ++i) {
    char c = input[i];
    if (c == '[' || c == '{') max_depth = std::max(max_depth, ++depth);
    if (c == ']' || c == '}') --depth;
    if ((c == 'e' || c == 'E') && i > 0 && input[i - 1] >= '0' && input[i - 1] <= '9') {
      exponent = true;
    }
  }
  if (kPendingJsonDepth && max_depth > 200) return true;
  if (kPendingJsonNumbers && exponent) return true;
  return false;
}

// Parses without recursion (so a deep document cannot overflow the checker's own stack).
// `utf8`: also reject invalid UTF-8 inside strings.
inline bool ParsesAsJson(std::string_view text, rapidjson::Document& d, bool utf8) {
  if (utf8) {
    d.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(text.data(),
                                                                                    text.size());
  } else {
    d.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
  }
  return !d.HasParseError();
}

// The JSONL rule: one line (no newline inside), valid UTF-8, one JSON object.
inline void CheckJsonObjectLine(std::string_view line, const std::string& what) {
  Check(line.find('\n') == std::string_view::npos, what + ": newline inside the line", line);
  Check(IsValidUtf8(line), what + ": not valid UTF-8", line);
  rapidjson::Document d;
  Check(ParsesAsJson(line, d, /*utf8=*/true), what + ": not valid JSON", line);
  Check(d.IsObject(), what + ": not a JSON object", line);
}

}  // namespace ae::fuzz
