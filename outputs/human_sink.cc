#include "outputs/human_sink.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <type_traits>

#include "base/utf8.h"
#include "base/write_all.h"
#include "outputs/review_render.h"

namespace ae {
namespace {

constexpr const char* kBold = "\x1b[1m";
constexpr const char* kDim = "\x1b[2m";
constexpr const char* kItalic = "\x1b[3m";
constexpr const char* kRed = "\x1b[31m";
constexpr const char* kGreen = "\x1b[32m";
constexpr const char* kMagenta = "\x1b[35m";
constexpr const char* kCyan = "\x1b[36m";

// The first `max_lines` lines of `text`, and a count of what was left out.
std::string FirstLines(const std::string& text, int max_lines) {
  std::string out;
  int lines = 0;
  size_t pos = 0;
  while (pos < text.size() && lines < max_lines) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string::npos ? text.size() : nl + 1;
    out.append(text, pos, end - pos);
    pos = end;
    ++lines;
  }
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  if (pos < text.size()) {
    size_t rest = 0;
    for (size_t i = pos; i < text.size(); ++i) rest += text[i] == '\n';
    if (text.back() != '\n') ++rest;
    out += fmt::format("… +{} lines\n", rest);
  }
  return out;
}

// A prompt of megabytes would fill the CI log: the echo shows its first 20 lines, at most
// 4 KiB of them, and a marker says how much was left out.
std::string ShortenedForLog(const std::string& text) {
  constexpr size_t kMaxBytes = 4096;
  constexpr int kMaxLines = 20;
  size_t cut = 0;
  for (int line = 0; line < kMaxLines && cut < text.size(); ++line) {
    const size_t nl = text.find('\n', cut);
    cut = nl == std::string::npos ? text.size() : nl + 1;
  }
  cut = Utf8PrefixLength(text, std::min(cut, kMaxBytes));
  if (cut >= text.size()) return text;
  std::string out = text.substr(0, cut);
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  return out + fmt::format("… [shortened for the log: the first {} of {} bytes]\n",
                           WithThousands(static_cast<int64_t>(cut)),
                           WithThousands(static_cast<int64_t>(text.size())));
}

// Short name: every piece of text from the model, a command or a tool goes through it.
std::string N(std::string_view text) {
  return NeutralizeForTerminal(text);
}

}  // namespace

std::string NeutralizeForTerminal(std::string_view text) {
  std::string clean = SanitizeUtf8(text);
  std::string out;
  out.reserve(clean.size());
  for (size_t i = 0; i < clean.size(); ++i) {
    const auto c = static_cast<unsigned char>(clean[i]);
    if (c == '\n' || c == '\t') {
      out.push_back(static_cast<char>(c));
    } else if (c == '\r' && i + 1 < clean.size() && clean[i + 1] == '\n') {
      // CRLF line ends print as line ends.
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xC2 && i + 1 < clean.size() &&
               static_cast<unsigned char>(clean[i + 1]) < 0xA0) {
      // U+0080..U+009F (C1: CSI, OSC, ST as single characters), valid UTF-8 after Sanitize.
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(clean[++i]));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string FinalMessageForStdout(std::string_view text, bool terminal) {
  return terminal ? NeutralizeForTerminal(text) : std::string(text);
}

std::string WithThousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

void HumanSink::Write(const std::string& text) {
  if (failed_) return;
  // A terminal or pipe that fails (or stops reading after a cancel) loses the view, not the
  // run: stdout's final message and the exit code still tell the outcome.
  if (!WriteAll(fd_, text, opt_.cancel).ok()) failed_ = true;
}

std::string HumanSink::Style(const char* ansi, const std::string& text) const {
  if (!opt_.color) return text;
  return std::string(ansi) + text + "\x1b[0m";
}

void HumanSink::Emit(const Event& event) {
  tally_.Observe(event);
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, ThreadStarted>) {
          const SessionInfo& i = e.info;
          std::string h = fmt::format("agentexec v{}\n--------\n", opt_.version);
          h += fmt::format("workdir: {}\nmodel: {}\nprovider: {}\napproval: {}\nsandbox: {}\n",
                           N(i.cwd), N(i.model), N(i.provider), N(i.approval), N(i.sandbox));
          if (!i.reasoning_effort.empty()) {
            h += fmt::format("reasoning effort: {}\n", N(i.reasoning_effort));
          }
          h += fmt::format("session id: {}\n--------\n", N(e.thread_id));
          Write(h);
          // A refused prompt is not echoed: the log gets the refusal, not the text refused.
          if (!opt_.prompt.empty() && !i.prompt_refused) {
            std::string p = N(ShortenedForLog(opt_.prompt));
            if (p.back() != '\n') p.push_back('\n');
            Write(Style(kBold, "user") + "\n" + p);
          }
        } else if constexpr (std::is_same_v<T, ItemStarted>) {
          OnItemStarted(e.item);
        } else if constexpr (std::is_same_v<T, ItemUpdated>) {
          if (std::holds_alternative<TodoListItem>(e.item.details)) ShowPlan(e.item);
        } else if constexpr (std::is_same_v<T, ItemCompleted>) {
          OnItemCompleted(e.item);
        } else if constexpr (std::is_same_v<T, TurnCompleted>) {
          Write(Style(kMagenta, "tokens used") + "\n" + WithThousands(TokensUsed(e.usage)) + "\n");
          Write(tally_.Line(event) + "\n");
        } else if constexpr (std::is_same_v<T, TurnFailed>) {
          // The preceding `error` event already printed the reason.
          Write(Style(kRed, tally_.Line(event)) + "\n");
        } else if constexpr (std::is_same_v<T, StreamError>) {
          // A retry notice is not a failure: it reads as one, dimmed, without "ERROR:".
          if (e.message.rfind("Reconnecting... ", 0) == 0) {
            Write(Style(kDim, "retry: " + N(e.message)) + "\n");
          } else {
            Write(Style(kRed, "ERROR: " + N(e.message)) + "\n");
          }
        }
      },
      event);
}

void HumanSink::OnItemStarted(const Item& item) {
  started_[item.id] = std::chrono::steady_clock::now();
  if (const auto* c = std::get_if<CommandExecutionItem>(&item.details)) {
    Write(Style(kMagenta, "exec") + "\n" + Style(kBold, N(c->command)) + "\n");
    last_shown_ = item.id;
  } else if (std::holds_alternative<TodoListItem>(item.details)) {
    ShowPlan(item);
  }
}

void HumanSink::OnItemCompleted(const Item& item) {
  auto elapsed_ms = [&]() -> int64_t {
    auto it = started_.find(item.id);
    if (it == started_.end()) return 0;
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 it->second)
        .count();
  };
  std::visit(
      [&](const auto& d) {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, AgentMessageItem>) {
          std::string text = N(d.text);
          if (text.empty() || text.back() != '\n') text.push_back('\n');
          Write(Style(kMagenta, "agent") + "\n" + text);
        } else if constexpr (std::is_same_v<T, ReasoningItem>) {
          Write(Style(kItalic, N(d.text)) + "\n");
        } else if constexpr (std::is_same_v<T, CommandExecutionItem>) {
          // Parallel commands: say again which command this result belongs to.
          if (last_shown_ != item.id) {
            Write(Style(kMagenta, "exec") + "\n" + Style(kBold, N(d.command)) + "\n");
          }
          std::string status =
              d.exit_code == 0
                  ? Style(kGreen, fmt::format(" succeeded in {}ms:", elapsed_ms()))
                  : Style(kRed, fmt::format(" exited {} in {}ms:", d.exit_code.value_or(-1),
                                            elapsed_ms()));
          Write(status + "\n" +
                Style(kDim, FirstLines(N(d.aggregated_output), opt_.command_output_lines)) + "\n");
        } else if constexpr (std::is_same_v<T, FileChangeItem>) {
          std::string out = Style(kMagenta, "apply patch") + "\n";
          out += d.status == ItemStatus::kCompleted ? Style(kGreen, "patch: completed")
                                                    : Style(kRed, "patch: failed");
          out += "\n";
          for (const FileChange& c : d.changes) {
            out += Style(kBold, N(c.path)) + "\n";
            if (!c.diff.empty()) {
              out += N(c.diff);
              if (c.diff.back() != '\n') out += "\n";
            }
          }
          Write(out + "\n");
        } else if constexpr (std::is_same_v<T, McpToolCallItem>) {
          std::string status = d.status == ItemStatus::kCompleted ? Style(kGreen, "completed")
                                                                  : Style(kRed, "failed");
          std::string out = Style(kMagenta, "tool") + " " + N(d.server) + "." + N(d.tool) + " " +
                            status + fmt::format(" in {}ms", elapsed_ms()) + "\n";
          if (d.error_message) out += Style(kRed, N(*d.error_message)) + "\n";
          Write(out);
        } else if constexpr (std::is_same_v<T, WebSearchItem>) {
          Write(Style(kMagenta, "web search") + ": " + N(d.query) + "\n");
        } else if constexpr (std::is_same_v<T, ErrorItem>) {
          Write(Style(kRed, "warning: ") + N(d.message) + "\n");
        } else if constexpr (std::is_same_v<T, ReviewItem>) {
          Write(Style(kMagenta, "review") + "\n" + N(ReviewMarkdown(d, opt_.repo_root, {})) + "\n");
        } else if constexpr (std::is_same_v<T, ContextCompactionItem>) {
          Write(Style(kDim,
                      fmt::format("context compacted: {} -> {} tokens",
                                  WithThousands(d.tokens_before), WithThousands(d.tokens_after))) +
                "\n");
        } else if constexpr (std::is_same_v<T, NetworkRequestItem>) {
          // Refusals only: what went through is the command's own business.
          if (!d.allowed) {
            Write(Style(kRed, "network refused") + " " +
                  N(fmt::format("{}:{} ({})", d.host, d.port, d.reason)) + "\n");
          }
        } else if constexpr (std::is_same_v<T, TodoListItem>) {
          // Shown as it was started and updated; nothing new at completion.
        }
      },
      item.details);
  started_.erase(item.id);
  last_shown_ = item.id;
}

void HumanSink::ShowPlan(const Item& item) {
  last_shown_ = item.id;
  const auto& todo = std::get<TodoListItem>(item.details);
  std::string out = Style(kMagenta, "plan") + "\n";
  bool current_marked = false;
  for (const TodoEntry& e : todo.items) {
    const char* mark = "•";
    if (e.completed) {
      mark = "✓";
    } else if (!current_marked) {
      mark = "→";  // the first open step is the one in progress
      current_marked = true;
    }
    out +=
        fmt::format("  {} {}\n", e.completed ? Style(kGreen, mark) : Style(kCyan, mark), N(e.text));
  }
  Write(out);
}

}  // namespace ae
