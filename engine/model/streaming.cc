#include "engine/model/streaming.h"

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>

#include <curl/curl.h>
#include <fmt/format.h>
#include <rapidjson/document.h>

#include "base/json.h"

namespace ae {
namespace {

constexpr const char* kHighDemand =
    "We\xE2\x80\x99re currently experiencing high demand, which may cause temporary errors.";

std::string UrlEscape(const std::string& s) {
  char* e = curl_easy_escape(nullptr, s.c_str(), static_cast<int>(s.size()));
  std::string out = e ? e : "";
  curl_free(e);
  return out;
}

// error.message of a JSON error body, or "".
std::string ErrorMessageOf(const std::string& body) {
  rapidjson::Document doc;
  if (ParseJsonInto(body, &doc) || !doc.IsObject()) return {};
  auto err = doc.FindMember("error");
  if (err == doc.MemberEnd()) return {};
  if (err->value.IsString()) return err->value.GetString();
  if (!err->value.IsObject()) return {};
  auto msg = err->value.FindMember("message");
  if (msg == err->value.MemberEnd() || !msg->value.IsString()) return {};
  return msg->value.GetString();
}

std::string Excerpt(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  if (s.size() > 2000) s = s.substr(0, 2000) + "...";
  return s;
}

// "unexpected status 503 Service Unavailable: boom, url: URL" (codex's form).
std::string UnexpectedStatus(const HttpResponse& r, const std::string& url) {
  std::string detail = ErrorMessageOf(r.error_body);
  if (detail.empty()) detail = Excerpt(r.error_body);
  if (detail.empty())
    return fmt::format("unexpected status {}, url: {}", StatusText(r.status), url);
  return fmt::format("unexpected status {}: {}, url: {}", StatusText(r.status), detail, url);
}

// Retry-After in milliseconds (delta-seconds form), or -1.
int64_t RetryAfterMs(const std::string& value) {
  if (value.empty()) return -1;
  char* end = nullptr;
  double secs = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !(secs >= 0) || secs > 600) return -1;
  return static_cast<int64_t>(std::llround(secs * 1000));
}

class DecoderSink : public HttpBodySink {
 public:
  explicit DecoderSink(StreamDecoder& decoder) : decoder_(decoder) {}
  bool OnBody(std::string_view bytes) override {
    Status fed = parser_.Feed(bytes, [this](SseEvent& ev) {
      if (!error_.empty()) return;
      Status s = decoder_.OnEvent(ev, &fatal_);
      if (!s) error_ = s.message();
    });
    if (!fed && error_.empty()) error_ = fed.message();
    return error_.empty();
  }
  const std::string& error() const { return error_; }
  bool fatal() const { return fatal_; }

 private:
  StreamDecoder& decoder_;
  SseParser parser_;
  std::string error_;
  bool fatal_ = false;
};

// The outcome of one outer attempt.
struct Attempt {
  std::optional<ModelResponse> response;
  std::string reason;
  bool retryable = false;
  int64_t delay_ms = -1;  // server-requested delay before the next attempt
  bool cancelled = false;
};

Attempt RunAttempt(HttpClient& http, const HttpRequest& request, const ProviderInfo& provider,
                   const std::function<std::unique_ptr<StreamDecoder>()>& make_decoder,
                   CancelToken& cancel) {
  Attempt a;
  for (int inner = 0;; ++inner) {
    std::unique_ptr<StreamDecoder> decoder = make_decoder();
    DecoderSink sink(*decoder);
    HttpResponse r = http.Post(request, sink, cancel);
    using O = HttpResponse::Outcome;
    if (r.outcome == O::kDone && r.event_stream) decoder->OnCleanEnd();
    if (decoder->complete()) {  // whatever happened after the end does not matter
      a.response = decoder->TakeResponse();
      return a;
    }
    if (r.outcome == O::kCancelled || cancel.cancelled()) {
      a.cancelled = true;
      a.reason = kCancelledMessage;
      return a;
    }
    if (r.outcome == O::kIdleTimeout) {
      a.reason = std::string(kStreamDisconnected) + "idle timeout waiting for SSE";
      a.retryable = true;
      return a;
    }
    if (r.outcome == O::kAbortedBySink) {
      a.reason = std::string(kStreamDisconnected) + sink.error();
      a.retryable = !sink.fatal();
      return a;
    }
    const bool no_answer = r.status == 0;
    const bool server_error = r.status >= 500 && !r.event_stream;
    if ((no_answer && r.outcome == O::kTransportError) || server_error) {
      if (inner < provider.request_max_retries) {
        int64_t delay = RetryAfterMs(r.retry_after);
        if (!SleepUnlessCancelled(delay >= 0 ? delay : BackoffMs(inner), cancel)) {
          a.cancelled = true;
          a.reason = kCancelledMessage;
          return a;
        }
        continue;
      }
      a.retryable = true;
      if (no_answer) {
        a.reason = fmt::format("error sending request for url ({}): {}", request.url, r.error);
      } else if (r.status == 500) {
        a.reason = kHighDemand;
      } else {
        a.reason = UnexpectedStatus(r, request.url);
      }
      a.delay_ms = RetryAfterMs(r.retry_after);
      return a;
    }
    if (r.event_stream) {  // a stream that ended (or broke) before it completed
      a.reason = std::string(kStreamDisconnected) + decoder->incomplete_reason();
      a.retryable = true;
      return a;
    }
    if (r.status == 429) {
      a.reason = "exceeded retry limit, last status: 429 Too Many Requests";
      a.retryable = true;
      a.delay_ms = RetryAfterMs(r.retry_after);
      return a;
    }
    if (r.status == 400) {
      a.reason = r.error_body.empty() ? UnexpectedStatus(r, request.url) : r.error_body;
      return a;
    }
    if (r.status >= 200 && r.status < 300) {
      if (!r.content_type.empty()) {
        a.reason =
            fmt::format("unexpected content type `{}` from {} (expected text/event-stream): {}",
                        r.content_type, request.url, Excerpt(r.error_body));
        return a;
      }
      a.reason = std::string(kStreamDisconnected) + decoder->incomplete_reason();
      a.retryable = true;
      return a;
    }
    if (r.outcome == O::kTransportError && r.status == 0) {
      a.reason = fmt::format("error sending request for url ({}): {}", request.url, r.error);
      return a;
    }
    a.reason = UnexpectedStatus(r, request.url);
    return a;
  }
}

}  // namespace

int64_t BackoffMs(int attempt) {
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.9, 1.1);
  const double base = 200.0 * std::ldexp(1.0, std::min(attempt, 16));
  return static_cast<int64_t>(base * jitter(rng));
}

bool SleepUnlessCancelled(int64_t ms, CancelToken& cancel) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (!cancel.cancelled()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return true;
    pollfd p{cancel.wake_fd(), POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (rc < 0 && errno != EINTR) return !cancel.cancelled();
  }
  return false;
}

HttpRequest MakeHttpRequest(const ProviderInfo& provider, const std::string& api_key,
                            const std::string& path, std::string body) {
  HttpRequest req;
  std::string base = provider.base_url.empty() ? "https://api.openai.com/v1" : provider.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  req.url = base + path;
  char sep = req.url.find('?') == std::string::npos ? '?' : '&';
  for (const auto& [k, v] : provider.query_params) {
    req.url += sep;
    req.url += UrlEscape(k) + "=" + UrlEscape(v);
    sep = '&';
  }
  req.headers.push_back("accept: text/event-stream");
  req.headers.push_back("content-type: application/json");
  if (!api_key.empty()) req.headers.push_back("authorization: Bearer " + api_key);
  for (const auto& [name, value] : provider.http_headers)
    req.headers.push_back(name + ": " + value);
  for (const auto& [name, var] : provider.env_http_headers) {
    const char* value = std::getenv(var.c_str());
    if (value && *value) req.headers.push_back(name + ": " + value);
  }
  req.body = std::move(body);
  req.connect_timeout_ms = provider.connect_timeout_ms;
  req.idle_timeout_ms = provider.stream_idle_timeout_ms;
  return req;
}

Result<ModelResponse> StreamWithRetries(
    HttpClient& http, const HttpRequest& request, const ProviderInfo& provider,
    const std::function<std::unique_ptr<StreamDecoder>()>& make_decoder, StreamObserver& observer,
    CancelToken& cancel) {
  const int max = std::max(provider.stream_max_retries, 0);
  for (int outer = 0;; ++outer) {
    Attempt a = RunAttempt(http, request, provider, make_decoder, cancel);
    if (a.response) return std::move(*a.response);
    if (a.cancelled || !a.retryable || outer >= max) return MakeError(a.reason);
    observer.OnRetry(outer + 1, max, a.reason);
    if (!SleepUnlessCancelled(a.delay_ms >= 0 ? a.delay_ms : BackoffMs(outer), cancel)) {
      return MakeError(kCancelledMessage);
    }
  }
}

}  // namespace ae
