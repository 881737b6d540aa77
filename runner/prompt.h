// The prompt: the positional argument, or all of stdin when it is absent or "-".
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace ae {

// How a prompt argument meets a stdin that is not a terminal (`git diff | agentexec "review
// this"`): as codex does, what stdin sends is appended in a `<stdin>` block. A CI runner may
// hand the step a pipe that never closes and never sends anything, so a pipe that sends
// nothing within `first_byte_wait` is left unread (with a note), and one that sends data but
// then stays silent for `idle_limit` without ending is an error rather than a hang.
struct PromptOptions {
  bool append_piped_stdin = false;
  std::chrono::milliseconds first_byte_wait{5000};
  std::chrono::milliseconds idle_limit{60000};
};

// Without `arg` (or with "-") reads `stdin_fd` to EOF; a terminal there is an error at once
// rather than a silent wait. With `arg`, stdin is read only under `append_piped_stdin`, and
// only when it is a pipe, FIFO, socket or regular file: never a terminal or another device.
// `note`, when given, receives a line for stderr when stdin was left unread after the wait.
// Errors are ready to print: "error: ..." (see DecodePrompt).
Result<std::string> ReadPrompt(const std::optional<std::string>& arg, int stdin_fd,
                               const PromptOptions& options = {}, std::string* note = nullptr);

// codex's block for piped stdin after a prompt argument: "PROMPT\n\n<stdin>\nTEXT\n</stdin>"
// (the newline before the closing tag is added only when TEXT lacks it).
std::string PromptWithStdin(std::string_view prompt, std::string_view stdin_text);

// Bytes as received -> UTF-8: a UTF-8 BOM is dropped, UTF-16 LE/BE with a BOM is decoded.
// Invalid UTF-8 (or UTF-16) is an error naming the byte offset in `raw`; so is an empty or
// whitespace-only prompt.
Result<std::string> DecodePrompt(std::string_view raw);

}  // namespace ae
