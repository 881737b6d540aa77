#include "engine/model/streaming.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string_view>

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

// The `error` member of a JSON error body (an object or a string), or null.
const rapidjson::Value* ErrorOf(const rapidjson::Document& doc) {
  return doc.IsObject() ? FindJsonMember(doc, "error") : nullptr;
}

// error.code (or error.type) of a JSON error body, or "".
std::string ErrorCodeOf(const std::string& body) {
  rapidjson::Document doc;
  if (ParseJsonInto(body, &doc)) return {};
  const rapidjson::Value* err = ErrorOf(doc);
  if (!err || !err->IsObject()) return {};
  std::string code = StringMember(*err, "code");
  return code.empty() ? StringMember(*err, "type") : code;
}

// error.message of a JSON error body, or "".
std::string ErrorMessageOf(const std::string& body) {
  rapidjson::Document doc;
  if (ParseJsonInto(body, &doc)) return {};
  const rapidjson::Value* err = ErrorOf(doc);
  if (!err) return {};
  if (err->IsString()) return err->GetString();
  return err->IsObject() ? StringMember(*err, "message") : std::string();
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

constexpr double kMaxHintMs = 600000;  // a longer hint is not waited for: back off instead

// A number of `unit` milliseconds in `value` (the whole string), or -1.
int64_t NumberMs(const std::string& value, double unit) {
  if (value.empty()) return -1;
  char* end = nullptr;
  double n = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !(n >= 0) || n * unit > kMaxHintMs) return -1;
  return static_cast<int64_t>(std::llround(n * unit));
}

// x-ratelimit-reset-* values: Go-style durations ("1s", "6m0s", "250ms", "1h2m3.5s").
int64_t DurationMs(const std::string& value) {
  if (value.empty()) return -1;
  double total = 0;
  const char* p = value.c_str();
  while (*p) {
    char* end = nullptr;
    double n = std::strtod(p, &end);
    if (end == p || !(n >= 0)) return -1;
    p = end;
    double unit = 0;
    if (p[0] == 'm' && p[1] == 's') {
      unit = 1, p += 2;
    } else if (p[0] == 'h') {
      unit = 3600000, p += 1;
    } else if (p[0] == 'm') {
      unit = 60000, p += 1;
    } else if (p[0] == 's') {
      unit = 1000, p += 1;
    } else {
      return -1;
    }
    total += n * unit;
  }
  return total > kMaxHintMs ? -1 : static_cast<int64_t>(std::llround(total));
}

// The delay the server asked for before a retry, or -1: retry-after-ms, then Retry-After
// (delta-seconds), then the later of the x-ratelimit-reset-requests/-tokens hints.
int64_t HintedDelayMs(const HttpResponse& r) {
  auto header = [&](const char* name) {
    auto it = r.headers.find(name);
    return it == r.headers.end() ? std::string() : it->second;
  };
  if (int64_t ms = NumberMs(header("retry-after-ms"), 1); ms >= 0) return ms;
  if (int64_t ms = NumberMs(r.retry_after, 1000); ms >= 0) return ms;
  return std::max(DurationMs(header("x-ratelimit-reset-requests")),
                  DurationMs(header("x-ratelimit-reset-tokens")));
}

// "cannot reach HOST (libcurl's reason)" for a request that got no answer at all.
std::string CannotReach(const std::string& url, const std::string& error) {
  std::string host = url;
  if (size_t scheme = host.find("://"); scheme != std::string::npos) host.erase(0, scheme + 3);
  host = host.substr(0, host.find_first_of("/?#"));
  return fmt::format("cannot reach {} ({})", host, error);
}

}  // namespace

bool IsQuotaCode(std::string_view code) {
  return code == "insufficient_quota" || code == "billing_hard_limit_reached" ||
         code == "billing_not_active" || code == "account_deactivated" ||
         code == "access_terminated";
}

std::string QuotaExceededMessage(std::string_view code, std::string_view detail) {
  // codex's own words for the common case, so scripts that match codex's message match ours.
  if (code == "insufficient_quota") return "Quota exceeded. Check your plan and billing details.";
  return fmt::format(
      "Quota exceeded ({}): {} Check your plan and billing details, or use another key; "
      "retrying cannot help.",
      code, detail.empty() ? std::string_view("429 Too Many Requests.") : detail);
}

ErrorCode ServiceErrorCode(std::string_view code) {
  if (code == "context_length_exceeded") return ErrorCode::kContextLength;
  if (IsQuotaCode(code) || code == "rate_limit_exceeded") return ErrorCode::kRateLimited;
  if (code == "invalid_api_key") return ErrorCode::kAuth;
  return ErrorCode::kNone;
}

Error ModelError(std::string message, ErrorCode code) {
  return MakeError(std::move(message), code == ErrorCode::kNone ? "" : ErrorCodeName(code));
}

namespace {

class DecoderSink : public HttpBodySink {
 public:
  explicit DecoderSink(StreamDecoder& decoder) : decoder_(decoder) {}
  // Complete events only: comments and partial lines do not count as a live stream.
  uint64_t progress() const override { return events_; }
  bool OnBody(std::string_view bytes) override {
    if (decoder_.json_body()) {
      ++events_;  // any byte is progress: there are no events to count
      if (json_.size() + bytes.size() > kMaxJsonBody) {
        error_ = fmt::format("the response body is larger than {} bytes", kMaxJsonBody);
        return false;
      }
      json_.append(bytes);
      return true;
    }
    Status fed = parser_.Feed(bytes, [this](SseEvent& ev) {
      ++events_;
      if (!error_.empty()) return;
      Status s = decoder_.OnEvent(ev, &fatal_);
      if (!s) {
        error_ = s.message();
        code_ = ErrorCodeFromName(s.error().code);
      }
    });
    if (!fed && error_.empty()) error_ = fed.message();
    return error_.empty();
  }
  const std::string& error() const { return error_; }
  ErrorCode code() const { return code_; }  // as the decoder classified the failure
  bool fatal() const { return fatal_; }
  // The body ended cleanly: a JSON body is decoded now.
  void OnCleanEnd() {
    if (decoder_.json_body() && error_.empty()) {
      SseEvent whole{"", std::move(json_), ""};
      Status s = decoder_.OnEvent(whole, &fatal_);
      if (!s) error_ = s.message();
    }
    decoder_.OnCleanEnd();
  }

 private:
  static constexpr size_t kMaxJsonBody = 256u << 20;
  std::string json_;
  StreamDecoder& decoder_;
  SseParser parser_;
  std::string error_;
  ErrorCode code_ = ErrorCode::kNone;
  bool fatal_ = false;
  uint64_t events_ = 0;
};

// The outcome of one outer attempt.
struct Attempt {
  std::optional<ModelResponse> response;
  std::string reason;
  ErrorCode code = ErrorCode::kNone;  // kNone: unclassified (model_error)
  bool retryable = false;
  int64_t delay_ms = -1;  // server-requested delay before the next attempt
  bool cancelled = false;
};

Attempt Cancelled() {
  Attempt a;
  a.cancelled = true;
  a.reason = kCancelledMessage;
  return a;
}

// What the transfer's outcome alone says: the stream completed, was cancelled, timed out or
// was ended by the decoder. nullopt: the status decides.
std::optional<Attempt> FromOutcome(const HttpResponse& r, const DecoderSink& sink,
                                   StreamDecoder& decoder, const HttpRequest& request,
                                   const CancelToken& cancel) {
  using O = HttpResponse::Outcome;
  Attempt a;
  if (decoder.complete()) {  // whatever happened after the end does not matter
    a.response = decoder.TakeResponse();
    return a;
  }
  if (r.outcome == O::kCancelled || cancel.cancelled()) return Cancelled();
  if (r.outcome == O::kIdleTimeout) {
    a.reason =
        std::string(kStreamDisconnected) +
        (r.head_received ? "idle timeout waiting for SSE" : "timeout waiting for response headers");
    a.retryable = true;
    return a;
  }
  if (r.outcome == O::kTotalTimeout) {
    a.reason = std::string(kStreamDisconnected) +
               fmt::format("the response took longer than {} ms", request.total_timeout_ms);
    a.retryable = true;
    return a;
  }
  if (r.outcome == O::kAbortedBySink) {
    // A final error the service stated in the stream (response.failed with a quota or
    // context code) is its answer, not a broken stream: it keeps its own words.
    a.reason = sink.fatal() ? sink.error() : std::string(kStreamDisconnected) + sink.error();
    a.code = sink.code();
    a.retryable = !sink.fatal();
    return a;
  }
  return std::nullopt;
}

// No answer at all, or a server error outside a stream: retried within the attempt.
bool ServerUnavailable(const HttpResponse& r) {
  const bool no_answer = r.status == 0;
  const bool server_error = r.status >= 500 && !r.event_stream;
  return (no_answer && r.outcome == HttpResponse::Outcome::kTransportError) || server_error;
}

// ServerUnavailable still after the provider's retries.
Attempt GaveUpOnServer(const HttpResponse& r, const HttpRequest& request) {
  Attempt a;
  a.retryable = true;
  if (r.status == 0) {
    a.reason = CannotReach(request.url, r.error);
  } else if (r.status == 500) {
    a.reason = kHighDemand;
  } else {
    a.reason = UnexpectedStatus(r, request.url);
  }
  a.delay_ms = HintedDelayMs(r);
  return a;
}

std::string AuthHint(const ProviderInfo& provider) {
  return provider.key_variable.empty()
             ? fmt::format(" (no API key was sent: set model_providers.{}.env_key)", provider.id)
             : fmt::format(" (the API key came from the environment variable `{}`)",
                           provider.key_variable);
}

// What the status and the error body say, the transfer having ended without a stream's end.
Attempt FromStatus(const HttpResponse& r, const HttpRequest& request, const ProviderInfo& provider,
                   const StreamDecoder& decoder) {
  Attempt a;
  if (r.event_stream) {  // a stream that ended (or broke) before it completed
    a.reason = std::string(kStreamDisconnected) + decoder.incomplete_reason();
    a.retryable = true;
    return a;
  }
  const std::string code = ErrorCodeOf(r.error_body);
  a.code = ServiceErrorCode(code);
  if (r.status == 429) a.code = ErrorCode::kRateLimited;
  if (r.status == 401 || r.status == 403) a.code = ErrorCode::kAuth;
  if (r.status == 429 && IsQuotaCode(code)) {
    a.reason = QuotaExceededMessage(code, ErrorMessageOf(r.error_body));
    return a;
  }
  if (r.status == 429) {
    a.reason = "exceeded retry limit, last status: 429 Too Many Requests";
    a.retryable = true;
    a.delay_ms = HintedDelayMs(r);
    return a;
  }
  if (code == "context_length_exceeded") {
    std::string detail = ErrorMessageOf(r.error_body);
    a.reason = detail.empty() ? std::string(kContextWindowExceeded)
                              : fmt::format("{} ({})", kContextWindowExceeded, detail);
    return a;
  }
  if (r.status == 401 || r.status == 403) {
    a.reason = UnexpectedStatus(r, request.url) + AuthHint(provider);
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
    a.reason = std::string(kStreamDisconnected) + decoder.incomplete_reason();
    a.retryable = true;
    return a;
  }
  if (r.outcome == HttpResponse::Outcome::kTransportError && r.status == 0) {
    a.reason = CannotReach(request.url, r.error);
    return a;
  }
  a.reason = UnexpectedStatus(r, request.url);
  return a;
}

Attempt RunAttempt(HttpClient& http, const HttpRequest& request, const ProviderInfo& provider,
                   const std::function<std::unique_ptr<StreamDecoder>()>& make_decoder,
                   CancelToken& cancel) {
  for (int inner = 0;; ++inner) {
    std::unique_ptr<StreamDecoder> decoder = make_decoder();
    DecoderSink sink(*decoder);
    HttpResponse r = http.Post(request, sink, cancel);
    if (r.outcome == HttpResponse::Outcome::kDone && r.event_stream) sink.OnCleanEnd();
    if (std::optional<Attempt> ended = FromOutcome(r, sink, *decoder, request, cancel)) {
      return std::move(*ended);
    }
    if (!ServerUnavailable(r)) return FromStatus(r, request, provider, *decoder);
    if (inner >= provider.request_max_retries) return GaveUpOnServer(r, request);
    int64_t delay = HintedDelayMs(r);
    if (!SleepUnlessCancelled(delay >= 0 ? delay : BackoffMs(inner), cancel)) return Cancelled();
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

std::string NewRequestId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t hi = rng(), lo = rng();
  // A random (version 4) UUID.
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xfff, 0x8000 | ((lo >> 48) & 0x3fff), lo & 0xffffffffffffULL);
}

HttpRequest MakeHttpRequest(const ProviderInfo& provider, const std::string& api_key,
                            const std::string& path, std::string body,
                            const std::string& thread_id) {
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
  // Who is calling and for which thread, as codex identifies itself: originator, the thread
  // as session_id, and an id for this one request. CODEX_INTERNAL_ORIGINATOR_OVERRIDE replaces
  // the originator as it does codex's (a value that could break the header is ignored).
  const char* originator = std::getenv("CODEX_INTERNAL_ORIGINATOR_OVERRIDE");
  if (originator == nullptr || *originator == '\0' ||
      std::string_view(originator).find_first_of("\r\n") != std::string_view::npos) {
    originator = kOriginator;
  }
  req.headers.push_back(std::string("originator: ") + originator);
  if (!thread_id.empty()) req.headers.push_back("session_id: " + thread_id);
  req.headers.push_back("x-client-request-id: " + NewRequestId());
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
  // A slow first byte under load is not a dead stream: the head gets twice the idle bound;
  // the whole response ten times.
  if (provider.stream_idle_timeout_ms > 0) {
    req.header_timeout_ms = 2 * provider.stream_idle_timeout_ms;
    req.total_timeout_ms = 10 * provider.stream_idle_timeout_ms;
  } else {
    req.header_timeout_ms = 0;
    req.total_timeout_ms = 0;
  }
  return req;
}

Result<ModelResponse> StreamWithRetries(
    HttpClient& http, const HttpRequest& request, const ProviderInfo& provider,
    const std::function<std::unique_ptr<StreamDecoder>()>& make_decoder, StreamObserver& observer,
    CancelToken& cancel) {
  const int max =
      static_cast<int>(std::clamp<int64_t>(provider.stream_max_retries, 0, kMaxProviderRetries));
  for (int outer = 0;; ++outer) {
    Attempt a = RunAttempt(http, request, provider, make_decoder, cancel);
    if (a.response) return std::move(*a.response);
    if (a.cancelled || !a.retryable || outer >= max) return ModelError(a.reason, a.code);
    observer.OnRetry(outer + 1, max, a.reason);
    if (!SleepUnlessCancelled(a.delay_ms >= 0 ? a.delay_ms : BackoffMs(outer), cancel)) {
      return MakeError(kCancelledMessage);
    }
  }
}

}  // namespace ae
