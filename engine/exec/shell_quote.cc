#include "engine/exec/shell_quote.h"

namespace ae {
namespace {

enum : unsigned { kBare = 1, kSingle = 2, kDouble = 4 };

bool BareOk(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '+':
    case '-':
    case '.':
    case '/':
    case ':':
    case '@':
    case ']':
    case '_':
      return true;
    default:
      return false;
  }
}

// Which quoting styles can hold `c`. Backslash is kept out of single quotes and `$`, `` ` ``,
// `!`, `^` out of double quotes (shells disagree on them there).
unsigned StylesFor(unsigned char c) {
  if (c >= 0x80) return kSingle | kDouble;
  unsigned ok = kSingle | kDouble;
  if (BareOk(c)) ok |= kBare;
  if (c == '\'' || c == '^' || c == '\\') ok &= ~kSingle;
  if (c == '`' || c == '$' || c == '!' || c == '^') ok &= ~kDouble;
  return ok;
}

}  // namespace

std::string ShellQuote(std::string_view word) {
  if (word.empty()) return "''";
  std::string out;
  size_t i = 0;
  while (i < word.size()) {
    // The longest run from i that one style can hold; prefer bare, then single, then double.
    unsigned ok = kBare | kSingle | kDouble;
    size_t j = i;
    if (word[j] == '^') {  // only safe right after an opening single quote
      ok = kSingle;
      ++j;
    }
    for (; j < word.size(); ++j) {
      unsigned next = ok & StylesFor(static_cast<unsigned char>(word[j]));
      if (next == 0) break;
      ok = next;
    }
    std::string_view run = word.substr(i, j - i);
    if (ok & kBare) {
      out += run;
    } else if (ok & kSingle) {
      out += '\'';
      out += run;
      out += '\'';
    } else {
      out += '"';
      for (char c : run) {
        if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
        out += c;
      }
      out += '"';
    }
    i = j;
  }
  return out;
}

std::string ShellJoin(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(w);
  }
  return out;
}

}  // namespace ae
