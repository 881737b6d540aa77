// UTF-8 helpers: everything that reaches the event stream or the model is valid UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ae {

bool IsValidUtf8(std::string_view s);
// Offset of the first byte that does not start a valid sequence, or npos when all is valid.
size_t FirstInvalidUtf8(std::string_view s);
// Replaces every invalid byte sequence with U+FFFD.
std::string SanitizeUtf8(std::string_view s);
// The largest n <= max such that s[0, n) does not end inside a multi-byte sequence.
size_t Utf8PrefixLength(std::string_view s, size_t max);
// The smallest start >= min such that s[start, end) does not begin inside a sequence.
size_t Utf8SuffixStart(std::string_view s, size_t min);

}  // namespace ae
