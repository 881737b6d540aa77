// A run's token counts as JSON: one writer for the events (`usage`, `last_usage`) and the
// session file's `usage` lines, so the two always name and order the counts alike.
#pragma once

#include "base/json.h"
#include "engine/events/events.h"

namespace ae {

// {"input_tokens":N,"cached_input_tokens":N,"cache_write_input_tokens":N,"output_tokens":N,
//  "reasoning_output_tokens":N}
void WriteUsage(JsonWriter& w, const Usage& u);

}  // namespace ae
