// `agentexec review`: from the command line to a review run (the change, the
// prompt, a confined session), and the structured result back out as JSON, Markdown, SARIF or
// a GitLab Code Quality report.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"
#include "cli/cli.h"
#include "engine/events/event_sink.h"
#include "engine/review/git.h"
#include "engine/session.h"

namespace ae {

// Diffs longer than this are cut at a line; the prompt says how to read the rest.
inline constexpr size_t kReviewMaxDiffBytes = 256 * 1024;

struct ReviewRun {
  std::string prompt;     // the user message: the change, its diff, the user's instructions
  std::string summary;    // what human mode echoes instead of the whole diff
  std::string repo_root;  // absolute
  std::optional<std::string> title;
  ReviewFormat format = ReviewFormat::kJson;
};

// Reads the user's review instructions (PROMPT; "-" reads stdin, absent reads nothing),
// computes the change through `git`, builds the prompt, and confines `session` whatever the
// configuration says: the read-only sandbox (no writable roots, no network), approval never,
// the review schema as the response format, and the final answer check that turns the model's
// JSON into the `review` item. A looser setting that is overridden becomes a warning. Errors
// are usage errors (exit 2), ready to print.
Result<ReviewRun> PrepareReview(const CliArgs& args, Git& git, SessionConfig& session,
                                int stdin_fd);

// Keeps the review item the turn reported.
class ReviewSink : public EventSink {
 public:
  void Emit(const Event& event) override;
  std::optional<ReviewItem> review() const;

 private:
  mutable std::mutex mu_;
  std::optional<ReviewItem> review_;
};

// The review as --format asks: compact JSON, Markdown for a pull request comment, a SARIF log
// or a Code Quality report. The latter two leave out what a CI system cannot place (a path
// outside the repository) and say so on `warnings_fd` ("warning: ..."), one line each.
std::string FormatReview(const ReviewRun& run, const ReviewItem& review, int warnings_fd = 2);

}  // namespace ae
