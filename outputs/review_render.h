// A review result (engine/events.h ReviewItem) as JSON and as Markdown. The JSON is what the
// `review` item carries, what -o writes and what the model returned, normalised; the Markdown
// is for a pull request comment: the verdict, then the findings by priority, each anchored
// `path:start-end`.
#pragma once

#include <optional>
#include <string>

#include "base/json.h"
#include "engine/events.h"

namespace ae {

// The result's members, in schema order, into an object the caller has started.
void WriteReviewFields(JsonWriter& w, const ReviewItem& review);

// The result as one compact JSON object (codex's ReviewOutputEvent shape).
std::string ReviewJson(const ReviewItem& review);

// Paths under `repo_root` are shown relative to it (what a pull request shows); `title` heads
// the comment when given.
std::string ReviewMarkdown(const ReviewItem& review, const std::string& repo_root,
                           const std::optional<std::string>& title);

}  // namespace ae
