// Validates JSONL event streams against the published schema (schema/events.schema.json, as
// embedded in the binary) with RapidJSON's schema validator. Every test that produces a
// --json stream calls this on it.
#pragma once

#include <string>
#include <string_view>

namespace ae::test {

// "" when `line` is one JSON object valid against the schema; else why not.
std::string ValidateEvent(std::string_view line);

// "" when every line of `jsonl` (newline-terminated) is a valid event; else the first failure
// with its line number.
std::string ValidateEventStream(std::string_view jsonl);

}  // namespace ae::test
