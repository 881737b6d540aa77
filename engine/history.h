// History: what the model sees, as Responses-API input items (JSON objects, one string
// each). The model's own items are appended verbatim; these build ours.
#pragma once

#include <string>
#include <vector>

namespace ae {

// {"type":"message","role":ROLE,"content":[{"type":"input_text","text":TEXT}]}
std::string MessageInputItem(const std::string& role, const std::string& text);
// The user prompt, with optional images (data: URLs) after the text.
std::string UserInputItem(const std::string& text, const std::vector<std::string>& image_urls);
// {"type":"function_call_output","call_id":ID,"output":OUTPUT} (custom_tool_call_output
// for free-form custom tools).
std::string ToolOutputItem(const std::string& call_id, const std::string& output, bool custom);

}  // namespace ae
