// A review result (engine/events/events.h ReviewItem) as JSON, as Markdown, as SARIF and as a
// GitLab Code Quality report. The JSON is what the `review` item carries, what -o writes and what
// the model returned, normalised; the Markdown is for a pull request comment: the verdict, then the
// findings by priority, each anchored `path:start-end`. SARIF (GitHub code scanning) and Code
// Quality (GitLab merge requests) show each finding inline on the change.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "engine/events/events.h"

namespace ae {

// The result's members, in schema order, into an object the caller has started.
void WriteReviewFields(JsonWriter& w, const ReviewItem& review);

// The result as one compact JSON object (codex's ReviewOutputEvent shape).
std::string ReviewJson(const ReviewItem& review);

// Paths under `repo_root` are shown relative to it (what a pull request shows); `title` heads
// the comment when given.
std::string ReviewMarkdown(const ReviewItem& review, const std::string& repo_root,
                           const std::optional<std::string>& title);

// A report for a CI system that shows findings on the change's lines. Those systems take only
// paths inside the repository and 1-based line ranges: a finding whose path is outside
// `repo_root` is left out, an invalid range is clamped, and each such repair is a note (in the
// SARIF log too) so nothing is lost silently.
struct CiReport {
  std::string text;
  std::vector<std::string> notes;
};

// A SARIF 2.1.0 log: one run, one result per finding, rule `agentexec/review/pN` per priority.
CiReport ReviewSarif(const ReviewItem& review, const std::string& repo_root,
                     std::string_view version);

// A GitLab Code Quality report: a JSON array, one issue per finding.
CiReport ReviewCodeQuality(const ReviewItem& review, const std::string& repo_root);

}  // namespace ae
