#include "runner/review.h"

#include <fmt/format.h>

#include "base/write_all.h"
#include "engine/review/review_output.h"
#include "engine/review/review_prompt.h"
#include "engine/review/selection.h"
#include "outputs/review_render.h"
#include "runner/prompt.h"

namespace ae {
namespace {

ReviewTarget TargetOf(const ReviewArgs& review) {
  if (review.base) return {ReviewTargetKind::kBase, *review.base};
  if (review.commit) return {ReviewTargetKind::kCommit, *review.commit};
  return {ReviewTargetKind::kUncommitted, ""};
}

// A review reads and never writes, whatever the configuration says; say what was overridden.
void Confine(SessionConfig& session) {
  sandbox::Settings& sb = session.sandbox;
  if (sb.mode != sandbox::Mode::kReadOnly) {
    session.warnings.push_back(
        fmt::format("agentexec review runs in the read-only sandbox; sandbox mode {} is ignored",
                    sandbox::ModeName(sb.mode)));
  }
  if (!sb.add_dirs.empty()) {
    session.warnings.push_back(
        "agentexec review runs in the read-only sandbox; --add-dir is ignored");
  }
  if (session.approval != ApprovalPolicy::kNever) {
    session.warnings.push_back(
        "agentexec review never runs commands outside the sandbox; approval policy on-failure is "
        "ignored");
  }
  sb.mode = sandbox::Mode::kReadOnly;
  sb.writable_roots.clear();
  sb.add_dirs.clear();
  sb.network_access = false;
  session.approval = ApprovalPolicy::kNever;
}

}  // namespace

Result<ReviewRun> PrepareReview(const CliArgs& args, Git& git, SessionConfig& session,
                                int stdin_fd) {
  const ReviewArgs& review = *args.review;
  ReviewRun run;
  run.title = review.title;
  run.format = review.format;

  // Without PROMPT a review needs nothing from stdin, so it never waits on it.
  std::optional<std::string> custom;
  if (args.prompt) {
    Result<std::string> text = ReadPrompt(args.prompt, stdin_fd);
    if (!text.ok()) return text.error();
    custom = std::move(*text);
  }

  Result<ChangeSelection> change = SelectChange(git, TargetOf(review), kReviewMaxDiffBytes);
  if (!change.ok()) return MakeError("error: " + change.message());
  run.repo_root = change->repo_root;
  run.prompt = ReviewRequest(*change, review.title, custom);
  run.summary = change->description + "\n";
  if (custom) run.summary += "Review instructions: " + *custom + "\n";

  Confine(session);
  session.output_schema_json = ReviewOutputSchema();
  session.developer_instructions =
      session.developer_instructions.empty()
          ? ReviewGuidelines()
          : ReviewGuidelines() + "\n\n" + session.developer_instructions;
  session.final_answer_check =
      [root = run.repo_root](const std::string& answer) -> Result<std::optional<ItemDetails>> {
    Result<ReviewItem> parsed = ParseReviewOutput(answer, root);
    if (!parsed.ok()) return parsed.error();
    return std::optional<ItemDetails>(std::move(*parsed));
  };
  return run;
}

void ReviewSink::Emit(const Event& event) {
  const auto* done = std::get_if<ItemCompleted>(&event);
  if (done == nullptr) return;
  if (const auto* r = std::get_if<ReviewItem>(&done->item.details)) {
    std::lock_guard<std::mutex> lock(mu_);
    review_ = *r;
  }
}

std::optional<ReviewItem> ReviewSink::review() const {
  std::lock_guard<std::mutex> lock(mu_);
  return review_;
}

std::string FormatReview(const ReviewRun& run, const ReviewItem& review, int warnings_fd) {
  CiReport report;
  switch (run.format) {
    case ReviewFormat::kJson:
      return ReviewJson(review);
    case ReviewFormat::kMarkdown: {
      // Like every final message: no trailing newline (stdout adds one, -o writes none).
      std::string md = ReviewMarkdown(review, run.repo_root, run.title);
      while (!md.empty() && md.back() == '\n') md.pop_back();
      return md;
    }
    case ReviewFormat::kSarif:
      report = ReviewSarif(review, run.repo_root, AGENTEXEC_VERSION);
      break;
    case ReviewFormat::kCodeQuality:
      report = ReviewCodeQuality(review, run.repo_root);
      break;
  }
  std::string warnings;
  for (const std::string& note : report.notes) warnings += "warning: " + note + "\n";
  // Best effort: the report is what the run delivers (a SARIF log carries the notes too).
  if (!warnings.empty()) (void)WriteAll(warnings_fd, warnings);
  return report.text;
}

}  // namespace ae
