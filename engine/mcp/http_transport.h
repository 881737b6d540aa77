// HttpTransport: an MCP server behind a streamable-HTTP endpoint (the MCP transport of
// protocol 2025-06-18). Every message is a POST of one JSON-RPC message to the endpoint with
// `Accept: application/json, text/event-stream`; the server answers a request either with one
// JSON body or with an event stream whose `data` fields are JSON-RPC messages (its answer,
// and possibly its own requests and notifications first), and a notification or response
// with 202 Accepted. The session id the server assigns at initialize (`Mcp-Session-Id`) and
// the negotiated protocol version go on every later POST. No redirect is followed and the
// token is sent only to the configured URL.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/mcp/mcp_config.h"
#include "engine/mcp/transport.h"

namespace ae {

class HttpTransport : public McpTransport {
 public:
  // Checks the spec (an http or https URL with a host; the bearer token's variable set;
  // header names and values that HTTP can carry); nothing is sent yet.
  static Result<std::unique_ptr<HttpTransport>> Connect(const McpServerSpec& spec);

  void StartReader(LineHandler on_line, CloseHandler on_close) override;
  // One POST, bounded by timeout_ms as a whole. A request (a message with `id` and
  // `method`) whose answer is not in the reply is an error.
  Status WriteLine(const std::string& line, int64_t timeout_ms, CancelToken* cancel) override;
  std::string StderrTail() const override { return {}; }
  pid_t pid() const override { return -1; }
  void Shutdown() override;

 private:
  HttpTransport() = default;

  std::string url_;
  std::vector<std::string> headers_;  // "Name: value": auth and the configured headers
  LineHandler on_line_;
  CloseHandler on_close_;
  std::mutex mu_;
  std::string session_id_;        // Mcp-Session-Id, once the server sent one
  std::string protocol_version_;  // from the initialize result
  std::atomic<bool> shut_down_{false};
};

}  // namespace ae
