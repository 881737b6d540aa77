// McpTransport: how JSON-RPC messages reach one MCP server and come back. McpClient speaks
// JSON-RPC over it and does not know whether the server is a child process on pipes
// (StdioTransport) or a streamable-HTTP endpoint (HttpTransport).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "base/cancel.h"
#include "base/result.h"

namespace ae {

class McpTransport {
 public:
  // Each message the server sends, and once, why no more will come.
  using LineHandler = std::function<void(std::string line)>;
  using CloseHandler = std::function<void(std::string why)>;

  virtual ~McpTransport() = default;

  virtual void StartReader(LineHandler on_line, CloseHandler on_close) = 0;
  // Sends one JSON-RPC message, waiting at most timeout_ms (and no longer than `cancel`, when
  // given, allows). Messages the server sends in answer may reach the line handler before
  // this returns (HTTP answers in the response to the POST).
  virtual Status WriteLine(const std::string& line, int64_t timeout_ms, CancelToken* cancel) = 0;
  // What the server said about itself that helps explain a failure (a process's stderr).
  virtual std::string StderrTail() const = 0;
  virtual pid_t pid() const = 0;  // -1 when the server is not our child
  virtual void Shutdown() = 0;    // idempotent
};

}  // namespace ae
