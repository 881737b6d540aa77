#include "engine/tools/apply_patch/parser.h"

#include <fmt/format.h>

namespace ae::patch {
namespace {

constexpr std::string_view kBegin = "*** Begin Patch";
constexpr std::string_view kEnd = "*** End Patch";
constexpr std::string_view kAdd = "*** Add File: ";
constexpr std::string_view kDelete = "*** Delete File: ";
constexpr std::string_view kUpdate = "*** Update File: ";
constexpr std::string_view kMove = "*** Move to: ";
constexpr std::string_view kEof = "*** End of File";

std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n\f\v");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n\f\v");
  return s.substr(b, e - b + 1);
}

bool StartsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line =
        text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return lines;
}

Error InvalidPatch(std::string_view msg) {
  return MakeError(fmt::format("invalid patch: {}", msg));
}
Error InvalidHunk(size_t line, std::string_view msg) {
  return MakeError(fmt::format("invalid hunk at line {}, {}", line, msg));
}

// The lines between the Begin and End markers, or the reason there are none.
Result<std::vector<std::string_view>> Body(const std::vector<std::string_view>& lines) {
  std::string_view first = lines.empty() ? std::string_view() : Trim(lines.front());
  std::string_view last = lines.empty() ? std::string_view() : Trim(lines.back());
  if (lines.empty() || first != kBegin) {
    return InvalidPatch("The first line of the patch must be '*** Begin Patch'");
  }
  if (lines.size() < 2 || last != kEnd) {
    return InvalidPatch("The last line of the patch must be '*** End Patch'");
  }
  return std::vector<std::string_view>(lines.begin() + 1, lines.end() - 1);
}

// `<<EOF`, `<<'EOF'`, `<<"EOF"`, optionally after `apply_patch ` (a shell heredoc pasted as is).
bool IsHeredocStart(std::string_view line) {
  line = Trim(line);
  for (std::string_view cmd : {"apply_patch", "applypatch"}) {
    if (StartsWith(line, cmd)) line = Trim(line.substr(cmd.size()));
  }
  return line == "<<EOF" || line == "<<'EOF'" || line == "<<\"EOF\"";
}

struct ChunkParse {
  Chunk chunk;
  size_t consumed = 0;
};

Result<ChunkParse> ParseChunk(const std::vector<std::string_view>& lines, size_t at,
                              size_t line_number, bool allow_missing_context) {
  ChunkParse out;
  size_t i = at;
  std::string_view head = lines[i];
  std::string_view head_trimmed = Trim(head);
  if (head_trimmed == "@@") {
    ++i;
  } else if (StartsWith(head, "@@ ")) {
    out.chunk.context = std::string(head.substr(3));
    ++i;
  } else if (!allow_missing_context) {
    return InvalidHunk(
        line_number,
        fmt::format("Expected update hunk to start with a @@ context marker, got: '{}'", head));
  }
  if (i >= lines.size()) {
    return InvalidHunk(line_number + 1, "Update hunk does not contain any lines");
  }
  size_t parsed = 0;
  for (; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (Trim(line) == kEof) {
      if (parsed == 0)
        return InvalidHunk(line_number + 1, "Update hunk does not contain any lines");
      out.chunk.end_of_file = true;
      ++parsed;
      ++i;
      break;
    }
    if (line.empty()) {  // a context line whose leading space was stripped
      out.chunk.old_lines.emplace_back();
      out.chunk.new_lines.emplace_back();
    } else if (line[0] == ' ') {
      out.chunk.old_lines.emplace_back(line.substr(1));
      out.chunk.new_lines.emplace_back(line.substr(1));
    } else if (line[0] == '+') {
      out.chunk.new_lines.emplace_back(line.substr(1));
    } else if (line[0] == '-') {
      out.chunk.old_lines.emplace_back(line.substr(1));
    } else {
      if (parsed == 0) {
        return InvalidHunk(line_number + 1,
                           fmt::format("Unexpected line found in update hunk: '{}'. Every line "
                                       "should start with ' ' (context line), '+' (added line), "
                                       "or '-' (removed line)",
                                       line));
      }
      break;  // the next chunk's `@@`, or the next hunk
    }
    ++parsed;
  }
  out.consumed = i - at;
  return out;
}

}  // namespace

Result<Patch> ParsePatch(std::string_view text) {
  std::vector<std::string_view> lines = SplitLines(Trim(text));
  auto body = Body(lines);
  if (!body.ok() && lines.size() >= 4 && IsHeredocStart(lines.front()) &&
      EndsWith(Trim(lines.back()), "EOF")) {
    auto inner = Body(std::vector<std::string_view>(lines.begin() + 1, lines.end() - 1));
    if (inner.ok()) body = std::move(inner);
  }
  if (!body.ok()) return body.error();
  const std::vector<std::string_view>& hl = *body;

  Patch patch;
  size_t i = 0;
  size_t line_number = 2;
  while (i < hl.size()) {
    std::string_view first = Trim(hl[i]);
    if (first.empty()) {  // blank lines between hunks
      ++i;
      ++line_number;
      continue;
    }
    Hunk hunk;
    size_t consumed = 1;
    if (StartsWith(first, kAdd)) {
      hunk.kind = Hunk::Kind::kAdd;
      hunk.path = std::string(Trim(first.substr(kAdd.size())));
      while (i + consumed < hl.size() && StartsWith(hl[i + consumed], "+")) {
        hunk.contents.append(hl[i + consumed].substr(1));
        hunk.contents += '\n';
        ++consumed;
      }
    } else if (StartsWith(first, kDelete)) {
      hunk.kind = Hunk::Kind::kDelete;
      hunk.path = std::string(Trim(first.substr(kDelete.size())));
    } else if (StartsWith(first, kUpdate)) {
      hunk.kind = Hunk::Kind::kUpdate;
      hunk.path = std::string(Trim(first.substr(kUpdate.size())));
      if (i + consumed < hl.size() && StartsWith(Trim(hl[i + consumed]), kMove)) {
        hunk.move_to = std::string(Trim(Trim(hl[i + consumed]).substr(kMove.size())));
        ++consumed;
      }
      while (i + consumed < hl.size()) {
        std::string_view line = hl[i + consumed];
        if (Trim(line).empty()) {  // blank separators between chunks
          ++consumed;
          continue;
        }
        if (StartsWith(line, "*")) break;  // the next hunk header
        auto chunk = ParseChunk(hl, i + consumed, line_number + consumed, hunk.chunks.empty());
        if (!chunk.ok()) return chunk.error();
        hunk.chunks.push_back(std::move(chunk->chunk));
        consumed += chunk->consumed;
      }
      if (hunk.chunks.empty()) {
        return InvalidHunk(line_number,
                           fmt::format("Update file hunk for path '{}' is empty", hunk.path));
      }
    } else {
      return InvalidHunk(
          line_number, fmt::format("'{}' is not a valid hunk header. Valid hunk headers: '*** Add "
                                   "File: {{path}}', '*** Delete File: {{path}}', '*** Update "
                                   "File: {{path}}'",
                                   first));
    }
    if (hunk.path.empty()) return InvalidHunk(line_number, "the hunk header has no path");
    // The kernel reads a path up to its first NUL: such a path would name another file.
    if (hunk.path.find('\0') != std::string::npos || hunk.move_to.find('\0') != std::string::npos) {
      return InvalidHunk(line_number, "the path holds a NUL byte");
    }
    patch.hunks.push_back(std::move(hunk));
    i += consumed;
    line_number += consumed;
  }
  return patch;
}

}  // namespace ae::patch
