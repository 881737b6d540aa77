#include "runner/prompt.h"

#include "base/utf8.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ae {
namespace {

constexpr const char* kNoPrompt = "No prompt provided. Pass it as an argument or on stdin.";

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// `raw` starts with the 2-byte BOM; offsets in errors count from the start of `raw`.
Result<std::string> DecodeUtf16(std::string_view raw, bool big_endian) {
  auto unit = [&](size_t i) {
    const auto a = static_cast<unsigned char>(raw[i]);
    const auto b = static_cast<unsigned char>(raw[i + 1]);
    return static_cast<uint32_t>(big_endian ? (a << 8 | b) : (b << 8 | a));
  };
  auto invalid = [](size_t offset) {
    return MakeError(fmt::format("prompt is not valid UTF-16 (byte offset {})", offset));
  };
  std::string out;
  size_t i = 2;
  while (i < raw.size()) {
    if (i + 1 >= raw.size()) return invalid(i);
    uint32_t u = unit(i);
    if (u >= 0xD800 && u <= 0xDBFF) {
      if (i + 3 >= raw.size()) return invalid(i);
      uint32_t low = unit(i + 2);
      if (low < 0xDC00 || low > 0xDFFF) return invalid(i);
      AppendUtf8(out, 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00));
      i += 4;
    } else if (u >= 0xDC00 && u <= 0xDFFF) {
      return invalid(i);
    } else {
      AppendUtf8(out, u);
      i += 2;
    }
  }
  return out;
}

bool IsBlank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos;
}

}  // namespace

Result<std::string> DecodePrompt(std::string_view raw) {
  std::string text;
  if (raw.starts_with("\xFF\xFE")) {
    Result<std::string> decoded = DecodeUtf16(raw, /*big_endian=*/false);
    if (!decoded.ok()) return decoded;
    text = std::move(*decoded);
  } else if (raw.starts_with("\xFE\xFF")) {
    Result<std::string> decoded = DecodeUtf16(raw, /*big_endian=*/true);
    if (!decoded.ok()) return decoded;
    text = std::move(*decoded);
  } else {
    size_t skip = raw.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    size_t bad = FirstInvalidUtf8(raw.substr(skip));
    if (bad != std::string_view::npos) {
      return MakeError(fmt::format("prompt is not valid UTF-8 (byte offset {})", skip + bad));
    }
    text = std::string(raw.substr(skip));
  }
  if (IsBlank(text)) return MakeError(kNoPrompt);
  return text;
}

namespace {

Result<std::string> ReadPromptBare(const std::optional<std::string>& arg, int stdin_fd) {
  if (arg && *arg != "-") return DecodePrompt(*arg);
  if (::isatty(stdin_fd)) return MakeError(kNoPrompt);
  std::string raw;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(stdin_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return MakeError(fmt::format("cannot read the prompt from stdin: {}", std::strerror(errno)));
    }
    if (n == 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  return DecodePrompt(raw);
}

}  // namespace

Result<std::string> ReadPrompt(const std::optional<std::string>& arg, int stdin_fd) {
  Result<std::string> prompt = ReadPromptBare(arg, stdin_fd);
  if (!prompt.ok()) return MakeError("error: " + prompt.message());
  return prompt;
}

}  // namespace ae
