#include "engine/tools/apply_patch/seek.h"

namespace ae::patch {
namespace {

std::string_view TrimEnd(std::string_view s) {
  size_t e = s.find_last_not_of(" \t\r\n\f\v");
  return e == std::string_view::npos ? std::string_view() : s.substr(0, e + 1);
}

std::string_view Trim(std::string_view s) {
  s = TrimEnd(s);
  size_t b = s.find_first_not_of(" \t\r\n\f\v");
  return b == std::string_view::npos ? std::string_view() : s.substr(b);
}

// Decodes the code point at s[i] (valid UTF-8 assumed; invalid bytes pass as themselves).
char32_t Decode(std::string_view s, size_t& i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  if (len == 1 || i + len > s.size()) {
    ++i;
    return c;
  }
  char32_t cp = c & (0xFF >> (len + 1));
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (b(i + k) & 0x3F);
  i += len;
  return cp;
}

char AsciiFor(char32_t cp) {
  switch (cp) {
    case 0x2010:
    case 0x2011:
    case 0x2012:
    case 0x2013:
    case 0x2014:
    case 0x2015:
    case 0x2212:
      return '-';
    case 0x2018:
    case 0x2019:
    case 0x201A:
    case 0x201B:
      return '\'';
    case 0x201C:
    case 0x201D:
    case 0x201E:
    case 0x201F:
      return '"';
    case 0x00A0:
    case 0x2002:
    case 0x2003:
    case 0x2004:
    case 0x2005:
    case 0x2006:
    case 0x2007:
    case 0x2008:
    case 0x2009:
    case 0x200A:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return ' ';
    default:
      return 0;
  }
}

template <class Eq>
std::optional<size_t> Scan(const std::vector<std::string_view>& lines,
                           const std::vector<std::string>& pattern, size_t from, size_t to, Eq eq) {
  for (size_t i = from; i <= to; ++i) {
    bool ok = true;
    for (size_t k = 0; k < pattern.size() && ok; ++k) ok = eq(lines[i + k], pattern[k]);
    if (ok) return i;
  }
  return std::nullopt;
}

}  // namespace

std::string NormalizePunctuation(std::string_view line) {
  line = Trim(line);
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size();) {
    size_t at = i;
    char32_t cp = Decode(line, i);
    char a = cp >= 0x80 ? AsciiFor(cp) : 0;
    if (a != 0) {
      out += a;
    } else {
      out.append(line.substr(at, i - at));
    }
  }
  return out;
}

std::optional<size_t> SeekSequence(const std::vector<std::string_view>& lines,
                                   const std::vector<std::string>& pattern, size_t start,
                                   bool at_end) {
  if (pattern.empty()) return start;
  if (pattern.size() > lines.size()) return std::nullopt;
  const size_t last = lines.size() - pattern.size();

  auto exact = [](std::string_view a, std::string_view b) { return a == b; };
  auto trail = [](std::string_view a, std::string_view b) { return TrimEnd(a) == TrimEnd(b); };
  auto both = [](std::string_view a, std::string_view b) { return Trim(a) == Trim(b); };
  auto punct = [](std::string_view a, std::string_view b) {
    return NormalizePunctuation(a) == NormalizePunctuation(b);
  };

  auto level = [&](auto eq) -> std::optional<size_t> {
    if (at_end && last >= start) {
      if (auto hit = Scan(lines, pattern, last, last, eq)) return hit;
    }
    if (start > last) return std::nullopt;
    return Scan(lines, pattern, start, last, eq);
  };
  if (auto hit = level(exact)) return hit;
  if (auto hit = level(trail)) return hit;
  if (auto hit = level(both)) return hit;
  return level(punct);
}

}  // namespace ae::patch
