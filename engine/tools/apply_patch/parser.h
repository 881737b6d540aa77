// The `*** Begin Patch` format models write: parsed into hunks, leniently (whitespace around
// markers, a heredoc wrapper, a first chunk without `@@`). Errors use codex's wording.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace ae::patch {

struct Chunk {
  std::optional<std::string> context;  // the `@@ <text>` line, if any
  std::vector<std::string> old_lines;
  std::vector<std::string> new_lines;
  bool end_of_file = false;  // `*** End of File`: old_lines sit at the end of the file
};

struct Hunk {
  enum class Kind { kAdd, kDelete, kUpdate };
  Kind kind = Kind::kUpdate;
  std::string path;           // as written in the patch
  std::string move_to;        // update only; empty = no move
  std::string contents;       // add only
  std::vector<Chunk> chunks;  // update only
};

struct Patch {
  std::vector<Hunk> hunks;
};

// Error messages: "invalid patch: ..." or "invalid hunk at line N, ...".
Result<Patch> ParsePatch(std::string_view text);

}  // namespace ae::patch
