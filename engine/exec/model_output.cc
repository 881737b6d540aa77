#include "engine/exec/model_output.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/utf8.h"

namespace ae {
namespace {

uint64_t CountLines(std::string_view s) {
  uint64_t n = static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n'));
  if (!s.empty() && s.back() != '\n') ++n;
  return n;
}

std::string Marker(uint64_t omitted_bytes) {
  return fmt::format("\u2026{} tokens truncated\u2026", ApproxTokens(omitted_bytes));
}

}  // namespace

CapturedText SanitizeCapture(const sandbox::RunResult& run) {
  CapturedText c;
  c.original_bytes = run.total_bytes;
  if (!run.truncated) {
    c.text = SanitizeUtf8(run.output);
    c.original_lines = run.total_lines;
    return c;
  }
  // Cut both halves on character boundaries before sanitising, so a character split by the
  // capture does not turn into replacement characters.
  std::string_view out = run.output;
  std::string_view head = out.substr(0, std::min(run.head_bytes, out.size()));
  std::string_view tail = out.substr(head.size());
  head = head.substr(0, Utf8PrefixLength(head, head.size()));
  tail = tail.substr(std::min(Utf8SuffixStart(tail, 0), tail.size()));
  c.text = SanitizeUtf8(head);
  c.gap = c.text.size();
  c.text += SanitizeUtf8(tail);
  c.cut = true;
  c.original_lines = run.total_lines;
  return c;
}

ModelBody CutForModel(const CapturedText& captured, size_t max_bytes, std::string_view prefix) {
  std::string full;
  full.reserve(prefix.size() + captured.text.size());
  full += prefix;
  full += captured.text;
  const size_t gap = captured.cut ? prefix.size() + captured.gap : std::string::npos;
  const uint64_t original = prefix.size() + captured.original_bytes;

  if (!captured.cut && full.size() <= max_bytes) return {std::move(full), false};

  std::string_view all = full;
  size_t head_len = Utf8PrefixLength(all, max_bytes / 2);
  size_t tail_start = Utf8SuffixStart(all, all.size() - std::min(all.size(), max_bytes / 2));
  if (gap != std::string::npos) {  // never reach across the capture's own gap
    head_len = std::min(head_len, gap);
    tail_start = std::max(tail_start, gap);
  }
  if (tail_start < head_len) tail_start = head_len;
  uint64_t kept = head_len + (all.size() - tail_start);
  uint64_t omitted = original > kept ? original - kept : 0;
  std::string body;
  body.reserve(kept + 48);
  body.append(all.substr(0, head_len));
  body += Marker(omitted);
  body.append(all.substr(tail_start));
  return {std::move(body), true};
}

std::string FormatUnifiedExecOutput(const CapturedText& captured, std::string_view note,
                                    size_t max_bytes, std::string_view chunk_id,
                                    double wall_seconds, std::optional<int> exit_code,
                                    std::optional<int> session_id) {
  ModelBody body = CutForModel(captured, max_bytes, note);
  uint64_t original_tokens = ApproxTokens(note.size() + captured.original_bytes);
  std::string out =
      fmt::format("Chunk ID: {}\nWall time: {:.4f} seconds\n", chunk_id, wall_seconds);
  if (exit_code) out += fmt::format("Process exited with code {}\n", *exit_code);
  if (session_id) out += fmt::format("Process running with session ID {}\n", *session_id);
  out += fmt::format("Original token count: {}\nOutput:\n", original_tokens);
  if (body.truncated) {
    out += fmt::format("Warning: truncated output (original token count: {})\n", original_tokens);
    out += fmt::format("Total output lines: {}\n\n", captured.original_lines + CountLines(note));
  }
  out += body.text;
  return out;
}

std::string FormatShellOutput(int exit_code, double wall_seconds, std::string_view body,
                              uint64_t total_lines) {
  std::string out =
      fmt::format("Exit code: {}\nWall time: {:.1f} seconds\n", exit_code, wall_seconds);
  if (total_lines != 0) out += fmt::format("Total output lines: {}\n", total_lines);
  out += "Output:\n";
  out += body;
  return out;
}

std::string FormatShellOutput(const sandbox::RunResult& run, const CapturedText& captured,
                              size_t max_bytes) {
  std::string note = TimeoutNote(run);
  ModelBody body = CutForModel(captured, max_bytes, note);
  return FormatShellOutput(run.exit_code, static_cast<double>(run.duration.count()) / 1000.0,
                           body.text,
                           body.truncated ? captured.original_lines + CountLines(note) : 0);
}

std::string TimeoutNote(const sandbox::RunResult& run) {
  if (run.timed_out) {
    return fmt::format("command timed out after {} milliseconds\n", run.duration.count());
  }
  if (run.cancelled) return "command was cancelled before it finished\n";
  return {};
}

std::string ItemOutput(const sandbox::RunResult& run) {
  CapturedText c = SanitizeCapture(run);
  std::string out;
  if (c.cut) {
    out.reserve(c.text.size() + 64);
    out.append(c.text, 0, c.gap);
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += fmt::format("[... {} bytes omitted ...]\n", run.total_bytes - run.output.size());
    out.append(c.text, c.gap, std::string::npos);
  } else {
    out = std::move(c.text);
  }
  std::string note = TimeoutNote(run);
  if (!note.empty()) {
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += note;
  }
  return out;
}

}  // namespace ae
