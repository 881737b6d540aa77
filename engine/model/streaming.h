// The retry policy shared by the HTTP wires (responses, chat), as codex does it:
//  - an inner, silent layer retries 5xx answers and connection failures up to
//    request_max_retries times, 200 ms x 2^n +-10% apart (Retry-After honoured);
//  - an outer layer retries the whole request up to stream_max_retries times when the
//    stream broke, ended early, reported a failure, stayed idle past stream_idle_timeout_ms,
//    or the inner layer gave up (5xx, 429); each retry is announced through
//    StreamObserver::OnRetry so the engine can print `Reconnecting... n/N (reason)`.
//  - 429 rate limits are retried by the outer layer after the delay the server hints
//    (retry-after-ms, Retry-After, x-ratelimit-reset-*), else with back-off; 429 quota codes
//    (insufficient_quota, ...) fail at once and say what to do;
//  - 401/403 fail at once naming the variable the key came from; 400
//    context_length_exceeded fails with kContextWindowExceeded;
//  - 400 and other 4xx fail at once with the server's message; so does a non-SSE answer.
// A wire plugs in a StreamDecoder that turns the events of one attempt into a response.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/cancel.h"
#include "base/result.h"
#include "engine/events/error_code.h"
#include "engine/model/client.h"
#include "engine/model/http.h"
#include "engine/model/sse.h"

namespace ae {

// Decodes one attempt's events. Output items are kept until Finish, so a retried attempt
// never leaks half a response.
class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;
  // An error fails the attempt; set `fatal` when retrying cannot help.
  virtual Status OnEvent(SseEvent& event, bool* fatal) = 0;
  // The body ended without a transport error (some chat servers omit [DONE]).
  virtual void OnCleanEnd() {}
  // The stream said it is complete (response.completed, [DONE]).
  virtual bool complete() const = 0;
  // Why the stream is unfinished when it ended without completing.
  virtual std::string incomplete_reason() const = 0;
  virtual ModelResponse TakeResponse() = 0;
  // The body is one JSON document, not an event stream (HttpRequest::accept_json): it reaches
  // OnEvent whole, as one event's data, when the body ends.
  virtual bool json_body() const { return false; }
};

// The turn.failed code for a service's error `code` (or `type`) field: context_length_exceeded,
// the quota codes and rate_limit_exceeded, invalid_api_key; kNone for anything else.
ErrorCode ServiceErrorCode(std::string_view code);

// Codes that retrying cannot fix: the account, not the moment (insufficient_quota, billing).
bool IsQuotaCode(std::string_view code);

// The one message for an exhausted quota, whether a 429 body or a response.failed event
// reported it: codex's "Quota exceeded. Check your plan and billing details." for
// insufficient_quota; "Quota exceeded (CODE): DETAIL Check your plan ... retrying cannot help."
// for the other account codes.
std::string QuotaExceededMessage(std::string_view code, std::string_view detail);

// The error a request fails with, classified (Error::code) when `code` is not kNone.
Error ModelError(std::string message, ErrorCode code);

// The prefix codex puts on every broken-stream reason.
inline constexpr const char* kStreamDisconnected = "stream disconnected before completion: ";

// The `originator` header: which client sends the request.
inline constexpr const char* kOriginator = "agentexec";

// URL (base_url + path + query_params) and headers (bearer key, provider headers, originator,
// session_id = the thread id, a fresh x-client-request-id) of a wire, and its time bounds.
HttpRequest MakeHttpRequest(const ProviderInfo& provider, const std::string& api_key,
                            const std::string& path, std::string body,
                            const std::string& thread_id = {});

// A fresh random UUID for x-client-request-id.
std::string NewRequestId();

// Runs `request` with the retry policy above; `make_decoder` gives a fresh decoder per
// attempt. The error of the result is the reason the turn fails with.
Result<ModelResponse> StreamWithRetries(
    HttpClient& http, const HttpRequest& request, const ProviderInfo& provider,
    const std::function<std::unique_ptr<StreamDecoder>()>& make_decoder, StreamObserver& observer,
    CancelToken& cancel);

// 200 ms x 2^attempt, +-10% (attempt counts from 0).
int64_t BackoffMs(int attempt);

// Sleeps up to `ms`; returns false at once when `cancel` fires.
bool SleepUnlessCancelled(int64_t ms, CancelToken& cancel);

// The message a cancelled request fails with.
inline constexpr const char* kCancelledMessage = "model request cancelled";

}  // namespace ae
