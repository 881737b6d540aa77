// Request bodies for the two HTTP wires, built from the same Prompt. History items are
// Responses-API JSON and are spliced into the Responses body verbatim (no reparse); the chat
// body maps them onto chat messages.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "engine/model/client.h"

namespace ae {

// The name codex gives the --output-schema format.
inline constexpr const char* kOutputSchemaName = "codex_output_schema";

// Which history items may be replayed with `store: false`: a reasoning item
// only with its encrypted_content and followed by the item it belongs to (the service answers
// 404 for the first and 400 for the second). Everything else is kept.
std::vector<bool> ReplayableItems(const std::vector<std::string>& input);

// POST {base_url}/responses. Key order as codex: model, stream, input, tools, tool_choice,
// parallel_tool_calls, reasoning, store, include, prompt_cache_key, text.
std::string BuildResponsesRequest(const ModelOptions& options, const Prompt& prompt);

// POST {base_url}/responses/compact (the public compaction endpoint): model, input (the
// history, replayable items only, as for /responses) and prompt_cache_key; nothing else, since
// the endpoint takes no tools, reasoning or text options.
std::string BuildCompactRequest(const ModelOptions& options, const Prompt& prompt);

// POST {base_url}/chat/completions. Fails when a history item or the tools are not JSON.
// Custom (free-form) tools are offered as functions taking one string parameter "input".
Result<std::string> BuildChatRequest(const ModelOptions& options, const Prompt& prompt);

}  // namespace ae
