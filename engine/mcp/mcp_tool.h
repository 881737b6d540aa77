// McpToolHandler: one MCP tool offered to the model as `mcp__<server>__<tool>`. A call is
// reported as an mcp_tool_call item and answered with what the server returned.
#pragma once

#include <memory>
#include <string>

#include "engine/mcp/client.h"
#include "engine/tools/router.h"

namespace ae {

// "mcp__<server>__<tool>" with every character outside [a-zA-Z0-9_-] replaced by '_'; a name
// longer than 64 characters (the Responses API limit) keeps its first 24 characters and gets
// the SHA-1 of the unsanitised name appended, as codex does.
std::string QualifiedToolName(const std::string& server, const std::string& tool);

// The text fed back to the model, as codex: structuredContent as compact JSON when present;
// otherwise the content blocks, text blocks as their text, any other block as compact JSON
// (images as a short placeholder), joined by newlines.
std::string McpModelOutput(const McpCallResult& result);

class McpToolHandler : public ToolHandler {
 public:
  McpToolHandler(std::shared_ptr<McpClient> client, McpTool tool, std::string qualified_name,
                 int64_t timeout_ms);

  std::string name() const override { return qualified_name_; }
  std::string spec_json() const override;
  // As codex: a server's tool may change anything, so it runs alone, unless the server marks
  // it read-only (annotations.readOnlyHint), when it runs alongside the other readers.
  bool parallel_safe() const override { return tool_.read_only; }
  ToolResult Handle(const ToolCall& call, ToolEnv& env) override;

 private:
  std::shared_ptr<McpClient> client_;
  McpTool tool_;
  std::string qualified_name_;
  int64_t timeout_ms_;
};

}  // namespace ae
