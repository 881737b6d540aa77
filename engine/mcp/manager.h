// McpServers: the configured MCP servers for one run. Starts them together, each within its
// startup timeout; a server that fails is reported as an `error` item and left out, and the
// run goes on. Their tools are offered through the ToolRouter; everything is stopped when
// this object goes away.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "engine/events/emitter.h"
#include "engine/mcp/client.h"
#include "engine/mcp/mcp_config.h"
#include "engine/tools/router.h"

namespace ae {

class McpServers {
 public:
  McpServers() = default;
  McpServers(McpServers&&) = default;
  McpServers& operator=(McpServers&&) = default;
  ~McpServers();  // Stop()

  // Emits `MCP server 'NAME' failed to start: <why>` for each server that does not come up.
  static McpServers Start(const std::vector<McpServerSpec>& specs, Emitter& emitter,
                          CancelToken& cancel);
  // One McpToolHandler per tool left after enabled_tools/disabled_tools, in config order.
  void RegisterTools(ToolRouter& router);
  // The model-facing names RegisterTools registers.
  std::vector<std::string> ToolNames() const;
  // Running servers by name (tests look at pids).
  std::shared_ptr<McpClient> client(const std::string& server) const;
  // Stops every server (tools registered earlier then answer with an error). Idempotent.
  void Stop();
  // As codex: "required MCP servers failed to initialize: a, b" when a server marked
  // `required` did not come up (the caller should fail the turn); nullopt otherwise.
  std::optional<std::string> RequiredFailure() const;

 private:
  struct Registered {
    std::shared_ptr<McpClient> client;
    McpTool tool;
    std::string qualified_name;
    int64_t timeout_ms;
  };
  std::vector<std::shared_ptr<McpClient>> clients_;
  std::vector<Registered> tools_;
  std::vector<std::string> failed_required_;
};

// Whether enabled_tools/disabled_tools let `tool` through.
bool McpToolAllowed(const McpServerSpec& spec, const std::string& tool);

}  // namespace ae
