// What a command's output looks like to the model: valid UTF-8, cut to a byte budget with
// the head and tail kept and codex's marker in between ("…N tokens truncated…").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/spawn.h"

namespace ae {

// A command's captured output as valid UTF-8. When the capture itself was cut (only head and
// tail kept), `gap` is where the missing middle was in `text`.
struct CapturedText {
  std::string text;
  bool cut = false;
  size_t gap = 0;
  uint64_t original_bytes = 0;  // everything the command printed
  uint64_t original_lines = 0;
};
CapturedText SanitizeCapture(const sandbox::RunResult& run);

// Codex counts tokens as bytes / 4, rounded up.
inline uint64_t ApproxTokens(uint64_t bytes) {
  return (bytes + 3) / 4;
}

struct ModelBody {
  std::string text;
  bool truncated = false;
};
// `prefix` (e.g. a timeout note) is put before the output and counts toward the budget.
ModelBody CutForModel(const CapturedText& captured, size_t max_bytes, std::string_view prefix = {});

// exec_command's reply (codex's unified-exec shape):
//   Chunk ID: …\nWall time: 0.1234 seconds\nProcess exited with code N\n
//   Original token count: T\nOutput:\n<body>
// "Process exited with code N" when it ended, "Process
// running with session ID N" when it still runs, neither line when neither is known. `note`
// (a timeout note) comes before the output and counts toward the budget.
std::string FormatUnifiedExecOutput(const CapturedText& captured, std::string_view note,
                                    size_t max_bytes, std::string_view chunk_id,
                                    double wall_seconds, std::optional<int> exit_code,
                                    std::optional<int> session_id);
// shell's reply (and apply_patch's): Exit code: N\nWall time: S seconds\nOutput:\n<body>
std::string FormatShellOutput(int exit_code, double wall_seconds, std::string_view body,
                              uint64_t total_lines = 0);
std::string FormatShellOutput(const sandbox::RunResult& run, const CapturedText& captured,
                              size_t max_bytes);

// The text shown in a command_execution item: the capture, with a marker where the middle
// was dropped and a note when the command was stopped.
std::string ItemOutput(const sandbox::RunResult& run);

std::string TimeoutNote(const sandbox::RunResult& run);

}  // namespace ae
