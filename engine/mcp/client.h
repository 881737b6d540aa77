// McpClient: the client side of one MCP server — JSON-RPC 2.0 over its pipes (stdio) or its
// streamable-HTTP endpoint (`url`), with
// the requests we need (initialize, tools/list, tools/call). Every wait is bounded by a
// timeout and the CancelToken; a server that dies, writes garbage or goes silent produces an
// error that says so, never a hang. Thread-safe: calls may overlap.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/fd.h"
#include "base/result.h"
#include "engine/mcp/mcp_config.h"
#include "engine/mcp/transport.h"

namespace ae {

inline constexpr const char* kMcpProtocolVersion = "2025-06-18";

struct McpTool {
  std::string name;
  std::string description;
  std::string input_schema_json;  // a JSON object; {"type":"object","properties":{}} if none
  bool read_only = false;         // annotations.readOnlyHint is true: it changes nothing
};

struct McpCallResult {
  std::string content_json;                    // JSON array of content blocks, compact
  std::optional<std::string> structured_json;  // structuredContent, compact; absent if null
  bool is_error = false;
};

class McpClient {
 public:
  // Starts the process (or prepares the HTTP endpoint) only; call Initialize next.
  static Result<std::unique_ptr<McpClient>> Spawn(const McpServerSpec& spec);
  ~McpClient();

  // `initialize`, then the `notifications/initialized` notification.
  Status Initialize(int64_t timeout_ms, CancelToken* cancel);
  // Every page of `tools/list`.
  Result<std::vector<McpTool>> ListTools(int64_t timeout_ms, CancelToken* cancel);
  // `arguments_json` is a JSON object, or empty to send none. A tool that reports isError
  // is a success here (is_error set); errors are about the call itself.
  Result<McpCallResult> CallTool(const std::string& tool, const std::string& arguments_json,
                                 int64_t timeout_ms, CancelToken* cancel);

  // A JSON-RPC request; returns the raw `result` value.
  Result<std::string> Request(const std::string& method, const std::string& params_json,
                              int64_t timeout_ms, CancelToken* cancel);

  const std::string& name() const { return name_; }
  pid_t pid() const { return transport_->pid(); }
  std::string StderrTail() const { return transport_->StderrTail(); }
  // Stops the server; later requests fail with "the server has been shut down".
  void Shutdown();

 private:
  struct Pending {
    Fd ready;  // eventfd, signalled when done
    bool done = false;
    std::string result;
    std::optional<std::string> error;
  };

  McpClient() = default;
  void OnLine(std::string line);
  void OnClose(std::string why);
  void CloseLocked(std::string message);
  void Answer(const std::string& line);  // to a request the server sent us
  void Notify(const std::string& method, const std::string& params_json);

  std::string name_;
  std::unique_ptr<McpTransport> transport_;
  std::mutex mu_;
  int64_t next_id_ = 0;
  std::map<int64_t, std::shared_ptr<Pending>> pending_;
  std::optional<std::string> closed_;  // why no further request can succeed
};

// "250 ms", "2 s", "1.5 s": for timeout messages.
std::string FormatTimeout(int64_t ms);

}  // namespace ae
