// What the model is told in a review: our review guidelines (appended to the developer
// message) and the request (the user message: the change, its diff, the user's own
// instructions).
#pragma once

#include <optional>
#include <string>

#include "engine/review/selection.h"

namespace ae {

// The review guidelines: what is worth a finding, priorities, confidence, locations, verdict.
const std::string& ReviewGuidelines();

// The user message. `title` (--title) names the change; `custom` (the PROMPT) adds the user's
// own review instructions.
std::string ReviewRequest(const ChangeSelection& change, const std::optional<std::string>& title,
                          const std::optional<std::string>& custom);

}  // namespace ae
