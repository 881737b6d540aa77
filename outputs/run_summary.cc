#include "outputs/run_summary.h"

#include <fmt/format.h>

namespace ae {
namespace {

std::string Plural(int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string Counts(const TurnStats& stats, const Usage& usage, int commands, int failed,
                   size_t files) {
  std::string out = Plural(stats.requests, "request", "requests") + ", " +
                    Plural(TokensUsed(usage), "token", "tokens") + ", " +
                    Plural(commands, "command", "commands");
  if (failed > 0) out += fmt::format(" ({} failed)", failed);
  out += ", " + Plural(static_cast<int64_t>(files), "file changed", "files changed");
  return out;
}

}  // namespace

std::string FormatElapsed(int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 60'000) return fmt::format("{}.{}s", ms / 1000, (ms % 1000) / 100);
  const int64_t s = ms / 1000;
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60);
}

int64_t TokensUsed(const Usage& u) {
  return u.input_tokens - u.cached_input_tokens + u.output_tokens;
}

void RunTally::Observe(const Event& event) {
  const auto* done = std::get_if<ItemCompleted>(&event);
  if (done == nullptr) return;
  if (const auto* c = std::get_if<CommandExecutionItem>(&done->item.details)) {
    ++commands_;
    if (c->status == ItemStatus::kFailed) ++commands_failed_;
  } else if (const auto* f = std::get_if<FileChangeItem>(&done->item.details)) {
    if (f->status != ItemStatus::kCompleted) return;
    for (const FileChange& change : f->changes) files_.insert(change.path);
  }
}

std::string RunTally::Line(const Event& end) const {
  if (const auto* ok = std::get_if<TurnCompleted>(&end)) {
    return fmt::format("done in {}: {}", FormatElapsed(ok->stats.duration_ms),
                       Counts(ok->stats, ok->usage, commands_, commands_failed_, files_.size()));
  }
  if (const auto* failed = std::get_if<TurnFailed>(&end)) {
    return fmt::format(
        "failed ({}) after {}: {}", ErrorCodeName(failed->code),
        FormatElapsed(failed->stats.duration_ms),
        Counts(failed->stats, failed->usage, commands_, commands_failed_, files_.size()));
  }
  return "";
}

}  // namespace ae
