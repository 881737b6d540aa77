// The structured result of a review: the JSON Schema sent to the model as its response format
// (strict: every object closed, every property required) and the check of its final answer.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "engine/events/events.h"

namespace ae {

// The review output schema (compact JSON), codex's ReviewOutputEvent field names.
const std::string& ReviewOutputSchema();

// The model's final answer -> a review. The answer must parse as JSON and validate against
// ReviewOutputSchema (RapidJSON's validator), and every line range must have start <= end.
// Relative paths are resolved against `repo_root`, so every path in the result is absolute.
Result<ReviewItem> ParseReviewOutput(std::string_view answer, const std::string& repo_root);

}  // namespace ae
