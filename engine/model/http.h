// HttpClient: one streamed HTTP POST at a time over libcurl (HTTP/1.1, or HTTP/2 over TLS as
// libcurl negotiates; proxies from the usual environment variables). The response body of a
// 2xx event stream goes to a sink as it arrives; anything else is collected for the error
// message. Timeouts are real: a connect timeout, and an idle timeout that aborts the transfer
// when no byte arrived for that long. A CancelToken aborts it at once: the wait polls the
// token's wake fd next to libcurl's sockets.
#pragma once

#include <cstdint>
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
  int64_t idle_timeout_ms = 300000;  // no byte received for this long aborts; <= 0: never
};

class HttpBodySink {
 public:
  virtual ~HttpBodySink() = default;
  // Body bytes of a 2xx text/event-stream response. Return false to abort the transfer.
  virtual bool OnBody(std::string_view bytes) = 0;
};

struct HttpResponse {
  enum class Outcome {
    kDone,            // the server finished the response (any status)
    kTransportError,  // connect failure, reset, truncated body...; see `error`
    kIdleTimeout,     // nothing arrived for idle_timeout_ms
    kCancelled,       // the CancelToken fired
    kAbortedBySink,   // OnBody returned false
  };
  Outcome outcome = Outcome::kTransportError;
  long status = 0;            // 0 when no response head arrived
  std::string content_type;   // of the final response head
  std::string retry_after;    // Retry-After header value, if any
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
  void* multi_;  // CURLM*; kept across requests so connections are reused
  void* easy_;   // CURL*
};

// "503 Service Unavailable": the status code and its standard reason phrase.
std::string StatusText(long status);

}  // namespace ae
