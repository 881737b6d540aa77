// The prompt (CONTRACT §1): the positional argument, or all of stdin when it is absent or "-".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace ae {

// When `arg` is given (and not "-") stdin is never touched, so a CI job that leaves stdin
// open cannot hang us. Otherwise reads `stdin_fd` to EOF; a terminal there is an error at
// once rather than a silent wait. Errors are ready to print: "error: ..." (see DecodePrompt).
Result<std::string> ReadPrompt(const std::optional<std::string>& arg, int stdin_fd);

// Bytes as received -> UTF-8: a UTF-8 BOM is dropped, UTF-16 LE/BE with a BOM is decoded.
// Invalid UTF-8 (or UTF-16) is an error naming the byte offset in `raw`; so is an empty or
// whitespace-only prompt.
Result<std::string> DecodePrompt(std::string_view raw);

}  // namespace ae
