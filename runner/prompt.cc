#include "runner/prompt.h"

#include "base/utf8.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ae {
namespace {

constexpr const char* kNoPrompt = "No prompt provided. Pass it as an argument or on stdin.";
// stdin was read and held nothing: codex's sentence first, for scripts that look for it.
constexpr const char* kNoPromptOnStdin =
    "No prompt provided via stdin. Pass it as an argument, or pipe it in.";

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
Result<std::string> DecodeUtf16(std::string_view raw, bool big_endian, std::string_view what) {
  auto unit = [&](size_t i) {
    const auto a = static_cast<unsigned char>(raw[i]);
    const auto b = static_cast<unsigned char>(raw[i + 1]);
    return static_cast<uint32_t>(big_endian ? (a << 8 | b) : (b << 8 | a));
  };
  auto invalid = [what](size_t offset) {
    return MakeError(fmt::format("{} is not valid UTF-16 (byte offset {})", what, offset));
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

namespace {

// DecodePrompt without the emptiness rule; `what` names the input in errors.
Result<std::string> DecodeText(std::string_view raw, std::string_view what) {
  std::string text;
  if (raw.starts_with("\xFF\xFE")) {
    Result<std::string> decoded = DecodeUtf16(raw, /*big_endian=*/false, what);
    if (!decoded.ok()) return decoded;
    text = std::move(*decoded);
  } else if (raw.starts_with("\xFE\xFF")) {
    Result<std::string> decoded = DecodeUtf16(raw, /*big_endian=*/true, what);
    if (!decoded.ok()) return decoded;
    text = std::move(*decoded);
  } else {
    size_t skip = raw.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    size_t bad = FirstInvalidUtf8(raw.substr(skip));
    if (bad != std::string_view::npos) {
      return MakeError(fmt::format("{} is not valid UTF-8 (byte offset {})", what, skip + bad));
    }
    text = std::string(raw.substr(skip));
  }
  return text;
}

}  // namespace

Result<std::string> DecodePrompt(std::string_view raw) {
  Result<std::string> text = DecodeText(raw, "prompt");
  if (text.ok() && IsBlank(*text)) return MakeError(kNoPrompt);
  return text;
}

namespace {

// Reads `fd` to EOF. With `idle_limit` > 0, a gap of that long without data (the writer keeps
// the pipe open but sends nothing) is an error instead of a wait that may never end.
Result<std::string> ReadToEnd(int fd, const char* what, std::chrono::milliseconds idle_limit) {
  std::string raw;
  char buf[65536];
  while (true) {
    if (idle_limit.count() > 0) {
      pollfd p{fd, POLLIN, 0};
      int ready = ::poll(&p, 1, static_cast<int>(idle_limit.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        return MakeError(fmt::format(
            "stdin sent {} bytes, then nothing for {} s without ending; close it (or redirect "
            "it from a file) so agentexec knows the input is complete",
            raw.size(), idle_limit.count() / 1000.0));
      }
    }
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return MakeError(fmt::format("cannot read {}: {}", what, std::strerror(errno)));
    }
    if (n == 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  return raw;
}

// What a prompt argument's companion stdin holds: nullopt when it is not read at all (a
// terminal, a device, a pipe that stayed silent), else its text (possibly empty).
Result<std::optional<std::string>> PipedStdin(int stdin_fd, const PromptOptions& options,
                                              std::string* note) {
  struct stat st;
  if (::fstat(stdin_fd, &st) != 0) return std::optional<std::string>();
  // /dev/null and friends hold nothing; /dev/zero would never end; a terminal is a person.
  if (!S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode) && !S_ISREG(st.st_mode)) {
    return std::optional<std::string>();
  }
  if (!S_ISREG(st.st_mode)) {
    pollfd p{stdin_fd, POLLIN, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, static_cast<int>(options.first_byte_wait.count()));
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
      if (note) {
        *note = fmt::format(
            "note: stdin is open but sent nothing within {} s, so only the prompt argument is "
            "used (redirect stdin from /dev/null to skip this wait)",
            options.first_byte_wait.count() / 1000.0);
      }
      return std::optional<std::string>();
    }
  }
  Result<std::string> raw = ReadToEnd(
      stdin_fd, "stdin", S_ISREG(st.st_mode) ? std::chrono::milliseconds(0) : options.idle_limit);
  if (!raw.ok()) return raw.error();
  Result<std::string> text = DecodeText(*raw, "stdin");
  if (!text.ok()) return text.error();
  // A blank stdin adds nothing, as in codex.
  if (IsBlank(*text)) return std::optional<std::string>(std::string());
  return std::optional<std::string>(std::move(*text));
}

Result<std::string> ReadPromptBare(const std::optional<std::string>& arg, int stdin_fd,
                                   const PromptOptions& options, std::string* note) {
  if (arg && *arg != "-") {
    Result<std::string> prompt = DecodePrompt(*arg);
    if (!prompt.ok() || !options.append_piped_stdin || ::isatty(stdin_fd)) return prompt;
    Result<std::optional<std::string>> piped = PipedStdin(stdin_fd, options, note);
    if (!piped.ok()) return piped.error();
    if (!piped->has_value() || (*piped)->empty()) return prompt;
    return PromptWithStdin(*prompt, **piped);
  }
  if (::isatty(stdin_fd)) return MakeError(kNoPrompt);
  Result<std::string> raw =
      ReadToEnd(stdin_fd, "the prompt from stdin", std::chrono::milliseconds(0));
  if (!raw.ok()) return raw;
  Result<std::string> text = DecodeText(*raw, "prompt");
  if (text.ok() && IsBlank(*text)) return MakeError(kNoPromptOnStdin);
  return text;
}

}  // namespace

std::string PromptWithStdin(std::string_view prompt, std::string_view stdin_text) {
  std::string out = fmt::format("{}\n\n<stdin>\n{}", prompt, stdin_text);
  if (!stdin_text.ends_with('\n')) out += '\n';
  out += "</stdin>";
  return out;
}

Result<std::string> ReadPrompt(const std::optional<std::string>& arg, int stdin_fd,
                               const PromptOptions& options, std::string* note) {
  Result<std::string> prompt = ReadPromptBare(arg, stdin_fd, options, note);
  if (!prompt.ok()) return MakeError("error: " + prompt.message());
  return prompt;
}

}  // namespace ae
