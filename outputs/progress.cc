#include "outputs/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/utf8.h"
#include "base/write_all.h"
#include "outputs/run_summary.h"

namespace ae {
namespace {

constexpr const char* kEraseLine = "\r\x1b[2K";

// One line, at most `width` characters, of a command for a status line.
std::string OneLine(const std::string& command, size_t width) {
  std::string line = command.substr(0, command.find('\n'));
  if (line.size() > width) line = line.substr(0, width) + "…";
  return SanitizeUtf8(line);
}

}  // namespace

void ProgressLines::OnEvent(const Event& event, int64_t now_ms) {
  if (const auto* started = std::get_if<ItemStarted>(&event)) {
    if (const auto* c = std::get_if<CommandExecutionItem>(&started->item.details)) {
      running_[started->item.id] =
          Running{c->command, now_ms, now_ms + opt_.first_notice_ms, opt_.first_notice_ms};
    }
  } else if (const auto* done = std::get_if<ItemCompleted>(&event)) {
    running_.erase(done->item.id);
  }
}

std::string ProgressLines::Tick(int64_t now_ms) {
  if (opt_.terminal) {
    if (running_.empty()) return Clear();
    const Running& oldest = running_.begin()->second;
    if (now_ms - oldest.started_ms < opt_.live_after_ms) return "";
    line_shown_ = true;
    std::string more = running_.size() > 1 ? fmt::format(" (+{} more)", running_.size() - 1) : "";
    return fmt::format("{}running ({}): {}{}", kEraseLine,
                       FormatElapsed(now_ms - oldest.started_ms), OneLine(oldest.command, 100),
                       more);
  }
  std::string out;
  for (auto& [id, r] : running_) {
    if (now_ms < r.next_notice_ms) continue;
    out += fmt::format("still running ({}): {}\n", FormatElapsed(now_ms - r.started_ms),
                       OneLine(r.command, 200));
    r.interval_ms = std::min(r.interval_ms * 2, opt_.max_interval_ms);
    r.next_notice_ms = now_ms + r.interval_ms;
  }
  return out;
}

std::string ProgressLines::Clear() {
  if (!line_shown_) return "";
  line_shown_ = false;
  return kEraseLine;
}

ProgressSink::ProgressSink(EventSink& inner, int fd, ProgressOptions options, MonotonicMs now)
    : inner_(inner), fd_(fd), now_(std::move(now)), lines_(options) {
  ticker_ = std::thread([this] { Loop(); });
}

ProgressSink::~ProgressSink() {
  Close();
}

void ProgressSink::Emit(const Event& event) {
  std::lock_guard<std::mutex> lock(mu_);
  Write(lines_.Clear());
  lines_.OnEvent(event, now_());
  inner_.Emit(event);
}

void ProgressSink::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
    Write(lines_.Clear());
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  inner_.Close();
}

void ProgressSink::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::seconds(1));
    if (stop_) break;
    Write(lines_.Tick(now_()));
  }
}

void ProgressSink::Write(const std::string& text) {
  (void)WriteAll(fd_, text);  // stderr gone: progress is best effort
}

}  // namespace ae
