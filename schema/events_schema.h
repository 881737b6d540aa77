// The published JSONL event schema (schema/events.schema.json), embedded at build time.
#pragma once

#include <string_view>

namespace ae {

// The file's exact text; `agentexec schema` prints it.
std::string_view EventsSchemaJson();

}  // namespace ae
