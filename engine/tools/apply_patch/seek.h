// Finding a patch's old lines in a file, from exact to forgiving: exact, then ignoring
// trailing whitespace, then ignoring surrounding whitespace, then with typographic dashes,
// quotes and spaces read as their ASCII forms (models often write one for the other).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ae::patch {

// First index >= start where `pattern` occurs in `lines`. With `at_end`, a match ending at
// the last line is preferred. An empty pattern matches at `start`.
std::optional<size_t> SeekSequence(const std::vector<std::string_view>& lines,
                                   const std::vector<std::string>& pattern, size_t start,
                                   bool at_end);

// The fourth level's view of a line: trimmed, Unicode punctuation mapped to ASCII.
std::string NormalizePunctuation(std::string_view line);

}  // namespace ae::patch
