// The prompt decoder (runner/prompt.h) on arbitrary bytes. Invariants: a decoded prompt is
// valid UTF-8 and not blank; UTF-8 input comes back unchanged (minus a BOM); a decoded
// prompt encoded as UTF-16 (LE and BE, with a BOM) decodes to itself; every error names a
// byte offset inside the input, or says the prompt is missing.
#include <cstdint>
#include <string>

#include "runner/prompt.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// UTF-8 (known valid) -> UTF-16 with a BOM.
std::string ToUtf16(const std::string& s, bool big_endian) {
  std::string out = big_endian ? "\xFE\xFF" : "\xFF\xFE";
  auto unit = [&](uint32_t u) {
    char hi = static_cast<char>(u >> 8), lo = static_cast<char>(u & 0xFF);
    out += big_endian ? hi : lo;
    out += big_endian ? lo : hi;
  };
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t cp = len == 1 ? b : len == 2 ? b & 0x1F : len == 3 ? b & 0x0F : b & 0x07;
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += static_cast<size_t>(len);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      unit(0xD800 + (cp >> 10));
      unit(0xDC00 + (cp & 0x3FF));
    } else {
      unit(cp);
    }
  }
  return out;
}

void CheckError(const std::string& message, size_t size) {
  if (message.find("byte offset ") == std::string::npos) {
    ae::fuzz::Check(!message.empty(), "an error without a message");
    return;
  }
  size_t offset = std::stoul(message.substr(message.find("byte offset ") + 12));
  ae::fuzz::Check(offset < size, "the error offset is past the input", message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  ae::Result<std::string> text = ae::DecodePrompt(raw);
  if (!text.ok()) {
    CheckError(text.message(), size);
    return 0;
  }
  ae::fuzz::Check(ae::IsValidUtf8(*text), "a decoded prompt that is not UTF-8", *text);
  ae::fuzz::Check(text->find_first_not_of(" \t\r\n\f\v") != std::string::npos,
                  "a blank prompt accepted");
  bool utf16 = raw.starts_with("\xFF\xFE") || raw.starts_with("\xFE\xFF");
  if (!utf16) {
    std::string_view expected = raw.starts_with("\xEF\xBB\xBF") ? raw.substr(3) : raw;
    ae::fuzz::Check(*text == expected, "UTF-8 input changed", *text);
  }
  for (bool be : {false, true}) {
    ae::Result<std::string> again = ae::DecodePrompt(ToUtf16(*text, be));
    ae::fuzz::Check(again.ok() && *again == *text, "the UTF-16 round trip differs", *text);
  }
  return 0;
}
