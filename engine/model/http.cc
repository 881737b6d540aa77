#include "engine/model/http.h"

#include <curl/curl.h>
#include <sys/utsname.h>

#include <chrono>
#include <cstdint>
#include <mutex>

#include <fmt/format.h>

#include "base/tls_roots.h"

namespace ae {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;

// libcurl's global init starts its TLS library too (OpenSSL reads its configuration), even
// when every request is plain http; it runs at the first request, not when a client is made,
// so a run that never sends one (the scripted provider, `agentexec sandbox`) never pays it.
void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Probed once per process, at the first https request: the portable binary has no built-in
// CA path (base/tls_roots.h), and a plain-http request needs none.
const TlsRoots& Roots() {
  static const TlsRoots roots = HostTlsRoots();
  return roots;
}

using Clock = std::chrono::steady_clock;

struct Transfer {
  HttpResponse* response;
  HttpBodySink* sink;
  CURL* easy;
  Clock::time_point last_activity;  // last body progress (or the head's arrival)
  bool sink_aborted = false;
  bool decided = false;      // whether this response streams to the sink was decided
  bool accept_json = false;  // HttpRequest::accept_json
};

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

std::string Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' '))
    s.remove_suffix(1);
  return std::string(s);
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.substr(0, 5) == "HTTP/") {  // a new response head (after 1xx or a proxy CONNECT)
    t->response->content_type.clear();
    t->response->retry_after.clear();
    t->response->headers.clear();
  } else if (line == "\r\n" || line == "\n") {  // the end of a head
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200) {
      t->response->head_received = true;
      t->last_activity = Clock::now();
    }
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name.rfind("retry-after", 0) == 0 || name.rfind("x-ratelimit-", 0) == 0 ||
        name == "x-request-id" || name == "mcp-session-id") {
      t->response->headers[name] = Trimmed(line.substr(colon + 1));
    }
  }
  if (StartsWithNoCase(line, "content-type:")) {
    t->response->content_type = Trimmed(line.substr(13));
  } else if (StartsWithNoCase(line, "retry-after:")) {
    t->response->retry_after = Trimmed(line.substr(12));
  }
  return size * n;
}

size_t OnWrite(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  HttpResponse& r = *t->response;
  if (!t->decided) {
    t->decided = true;
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    r.status = status;
    const bool ok = status >= 200 && status < 300;
    r.event_stream =
        ok && (r.content_type.empty() || StartsWithNoCase(r.content_type, "text/event-stream") ||
               (t->accept_json && StartsWithNoCase(r.content_type, "application/json")));
  }
  if (r.event_stream) {
    r.body_started = true;
    const uint64_t before = t->sink->progress();
    const bool go_on = t->sink->OnBody(std::string_view(data, len));
    if (t->sink->progress() != before) t->last_activity = Clock::now();
    if (!go_on) {
      t->sink_aborted = true;
      return 0;  // makes libcurl abort with CURLE_WRITE_ERROR
    }
    return len;
  }
  t->last_activity = Clock::now();  // an error body: any byte is progress
  if (r.error_body.size() < kMaxErrorBody) {
    r.error_body.append(data, std::min(len, kMaxErrorBody - r.error_body.size()));
  }
  return len;
}

}  // namespace

HttpClient::HttpClient() = default;

HttpClient::~HttpClient() {
  if (easy_) curl_easy_cleanup(static_cast<CURL*>(easy_));
  if (multi_) curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

namespace {

// The request on the reused handle, which reports to `t`; the header list to free after.
curl_slist* SetOptions(CURL* easy, const HttpRequest& request, Transfer& t, char* errbuf) {
  curl_easy_reset(easy);
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(easy, CURLOPT_POST, 1L);
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_USERAGENT,
                   request.user_agent.empty() ? UserAgent().c_str() : request.user_agent.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout_ms));
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &OnWrite);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
  if (StartsWithNoCase(request.url, "https://")) {
    if (!Roots().file.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, Roots().file.c_str());
    if (!Roots().dir.empty()) curl_easy_setopt(easy, CURLOPT_CAPATH, Roots().dir.c_str());
  }
  return headers;
}

// Runs the transfer until it finishes (*finished, with libcurl's result), fails, is
// cancelled or runs out of time; the last three are set in t.response.
CURLcode Perform(CURLM* multi, const HttpRequest& request, Transfer& t, CancelToken& cancel,
                 Clock::time_point started, bool* finished) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  HttpResponse& response = *t.response;
  CURLcode result = CURLE_OK;
  while (true) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK) {
      response.error = curl_multi_strerror(mc);
      break;
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == t.easy) {
        *finished = true;
        result = msg->data.result;
      }
    }
    if (*finished || running == 0) break;
    if (cancel.cancelled()) {
      response.outcome = HttpResponse::Outcome::kCancelled;
      break;
    }
    // Before the head arrives the (longer) header bound applies, then the idle timeout on
    // body progress; a non-positive value disables either. The total bound covers both.
    const auto now = Clock::now();
    const int64_t limit =
        response.head_received
            ? (request.idle_timeout_ms > 0 ? request.idle_timeout_ms : INT64_MAX)
            : (request.header_timeout_ms > 0 ? request.header_timeout_ms : INT64_MAX);
    const int64_t idle = duration_cast<milliseconds>(now - t.last_activity).count();
    if (idle >= limit) {
      response.outcome = HttpResponse::Outcome::kIdleTimeout;
      break;
    }
    const int64_t total_limit = request.total_timeout_ms > 0 ? request.total_timeout_ms : INT64_MAX;
    const int64_t elapsed = duration_cast<milliseconds>(now - started).count();
    if (elapsed >= total_limit) {
      response.outcome = HttpResponse::Outcome::kTotalTimeout;
      break;
    }
    curl_waitfd wake{cancel.wake_fd(), CURL_WAIT_POLLIN, 0};
    const int wait_ms =
        static_cast<int>(std::min<int64_t>(std::min(limit - idle, total_limit - elapsed), 1000));
    curl_multi_poll(multi, &wake, 1, std::max(wait_ms, 1), nullptr);
  }
  return result;
}

// No body byte arrived: the head alone says what the response is.
void ClassifyHead(CURL* easy, HttpResponse& response) {
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  response.status = status;
  response.event_stream = status >= 200 && status < 300 &&
                          (response.content_type.empty() ||
                           StartsWithNoCase(response.content_type, "text/event-stream"));
}

void SetFinishedOutcome(const Transfer& t, CURLcode result, const char* errbuf,
                        HttpResponse& response) {
  if (t.sink_aborted) {
    response.outcome = HttpResponse::Outcome::kAbortedBySink;
  } else if (result == CURLE_OK) {
    response.outcome = HttpResponse::Outcome::kDone;
  } else {
    response.outcome = HttpResponse::Outcome::kTransportError;
    response.error = errbuf[0] ? errbuf : curl_easy_strerror(result);
  }
}

}  // namespace

HttpResponse HttpClient::Post(const HttpRequest& request, HttpBodySink& sink, CancelToken& cancel) {
  HttpResponse response;
  if (!multi_ && !easy_) {  // the first request: libcurl's handles are made once, then reused
    GlobalInitOnce();
    multi_ = curl_multi_init();
    easy_ = curl_easy_init();
  }
  auto* multi = static_cast<CURLM*>(multi_);
  auto* easy = static_cast<CURL*>(easy_);
  if (!multi || !easy) {
    response.error = "could not initialise libcurl";
    return response;
  }
  const Clock::time_point started = Clock::now();
  Transfer t{&response, &sink, easy, started};
  t.accept_json = request.accept_json;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = SetOptions(easy, request, t, errbuf);

  curl_multi_add_handle(multi, easy);
  bool finished = false;
  const CURLcode result = Perform(multi, request, t, cancel, started, &finished);
  if (!t.decided) ClassifyHead(easy, response);
  curl_multi_remove_handle(multi, easy);
  curl_slist_free_all(headers);
  if (finished) SetFinishedOutcome(t, result, errbuf, response);
  return response;
}

const std::string& UserAgent() {
  static const std::string agent = [] {
    utsname u{};
    if (::uname(&u) != 0) return std::string("agentexec/" AGENTEXEC_VERSION);
    return fmt::format("agentexec/{} ({} {}; {})", AGENTEXEC_VERSION, u.sysname, u.release,
                       u.machine);
  }();
  return agent;
}

std::string StatusText(long status) {
  const char* reason = "";
  switch (status) {
    case 400:
      reason = "Bad Request";
      break;
    case 401:
      reason = "Unauthorized";
      break;
    case 402:
      reason = "Payment Required";
      break;
    case 403:
      reason = "Forbidden";
      break;
    case 404:
      reason = "Not Found";
      break;
    case 405:
      reason = "Method Not Allowed";
      break;
    case 408:
      reason = "Request Timeout";
      break;
    case 409:
      reason = "Conflict";
      break;
    case 413:
      reason = "Payload Too Large";
      break;
    case 415:
      reason = "Unsupported Media Type";
      break;
    case 422:
      reason = "Unprocessable Entity";
      break;
    case 429:
      reason = "Too Many Requests";
      break;
    case 500:
      reason = "Internal Server Error";
      break;
    case 501:
      reason = "Not Implemented";
      break;
    case 502:
      reason = "Bad Gateway";
      break;
    case 503:
      reason = "Service Unavailable";
      break;
    case 504:
      reason = "Gateway Timeout";
      break;
    default:
      break;
  }
  return *reason ? fmt::format("{} {}", status, reason) : fmt::format("{}", status);
}

}  // namespace ae
