// HttpClient: one streamed HTTP POST at a time over libcurl (HTTP/1.1, or HTTP/2 over TLS as
// libcurl negotiates; proxies from the usual environment variables). The response body of a
// 2xx event stream goes to a sink as it arrives; anything else is collected for the error
// message. Timeouts are real: a connect timeout; a bound on the wait for the response head;
// an idle timeout on the body that counts the sink's progress (complete events), not bytes,
// so SSE comments or a byte a second cannot keep a dead stream open; and a bound on the whole
// request. A CancelToken aborts it at once: the wait polls the
// token's wake fd next to libcurl's sockets.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/cancel.h"

namespace ae {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  int64_t connect_timeout_ms = 30000;
  int64_t idle_timeout_ms = 300000;    // no body progress for this long aborts; <= 0: never
  int64_t header_timeout_ms = 600000;  // no response head this long after the start; <= 0: never
  int64_t total_timeout_ms = 0;        // the whole request, head and body; <= 0: never
  std::string user_agent;              // "" = UserAgent()
  // A 2xx application/json answer goes to the sink like an event stream (the compaction
  // endpoint answers with one JSON object); otherwise it is collected as an error body.
  bool accept_json = false;
};

class HttpBodySink {
 public:
  virtual ~HttpBodySink() = default;
  // Body bytes of a 2xx text/event-stream response. Return false to abort the transfer.
  virtual bool OnBody(std::string_view bytes) = 0;
  // A counter that grows when the body made progress (for an event stream: a complete event
  // was dispatched). The idle timeout restarts only when it changes.
  virtual uint64_t progress() const = 0;
};

struct HttpResponse {
  enum class Outcome {
    kDone,            // the server finished the response (any status)
    kTransportError,  // connect failure, reset, truncated body...; see `error`
    kIdleTimeout,     // no progress for idle_timeout_ms (or no head for header_timeout_ms)
    kTotalTimeout,    // the request took longer than total_timeout_ms
    kCancelled,       // the CancelToken fired
    kAbortedBySink,   // OnBody returned false
  };
  Outcome outcome = Outcome::kTransportError;
  long status = 0;             // 0 when no response head arrived
  std::string content_type;    // of the final response head
  std::string retry_after;     // Retry-After header value, if any
  bool head_received = false;  // a final response head arrived
  // Headers of the final response head that classify errors: lower-case name -> value
  // (retry-after-ms, x-ratelimit-reset-*, x-request-id, ...) or carry state (mcp-session-id).
  std::map<std::string, std::string> headers;
  bool event_stream = false;  // 2xx with a text/event-stream (or no) content type
  std::string error_body;     // body of a non-stream response, capped at 64 KiB
  std::string error;          // libcurl's description of a transport error
  bool body_started = false;  // at least one body byte reached the sink
};

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // POSTs `request.body`. Never throws; every failure is described in the result.
  HttpResponse Post(const HttpRequest& request, HttpBodySink& sink, CancelToken& cancel);

 private:
  // Made by the first Post (libcurl's global init with them), then kept across requests so
  // connections are reused.
  void* multi_ = nullptr;  // CURLM*
  void* easy_ = nullptr;   // CURL*
};

// "agentexec/<version> (<os> <release>; <arch>)", from uname(2).
const std::string& UserAgent();

// "503 Service Unavailable": the status code and its standard reason phrase.
std::string StatusText(long status);

}  // namespace ae
