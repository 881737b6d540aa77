#include "engine/mcp/http_transport.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <optional>

#include "base/json.h"
#include "engine/model/http.h"
#include "engine/model/sse.h"

namespace ae {
namespace {

constexpr size_t kMaxBody = 64u << 20;
constexpr int64_t kMaxConnectTimeoutMs = 30000;
constexpr size_t kErrorExcerpt = 200;

// Why `url` cannot be an MCP endpoint, or "".
std::string UnusableUrl(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "it has no scheme (http:// or https://)";
  std::string scheme = url.substr(0, scheme_end);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (scheme != "http" && scheme != "https") {
    return fmt::format("its scheme is '{}', not http or https", scheme);
  }
  const std::string rest = url.substr(scheme_end + 3);
  if (rest.empty() || rest[0] == '/' || rest[0] == '?' || rest[0] == '#') return "it has no host";
  for (unsigned char c : url) {
    if (c <= 0x20 || c == 0x7f) return "it holds a space or a control character";
  }
  return {};
}

// A header name is an HTTP token; a value holds no line break or NUL (it would end the header
// and start another of the server's choosing).
std::string UnusableHeader(const std::string& name, const std::string& value) {
  if (name.empty()) return "an empty header name";
  for (unsigned char c : name) {
    if (c <= 0x20 || c >= 0x7f ||
        std::string_view("()<>@,;:\\\"/[]?={}").find(static_cast<char>(c)) !=
            std::string_view::npos) {
      return fmt::format("the header name '{}' is not an HTTP token", name);
    }
  }
  for (unsigned char c : value) {
    if (c == '\r' || c == '\n' || c == '\0') {
      return fmt::format("the value of header '{}' holds a line break or NUL", name);
    }
  }
  return {};
}

std::string Excerpt(std::string_view s) {
  if (s.size() <= kErrorExcerpt) return std::string(s);
  size_t n = kErrorExcerpt;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n)) + "…";
}

// The body of a reply: one JSON value (an object, or a batch array) or an event stream whose
// data fields are JSON-RPC messages. Which one is decided by the first byte that is not
// white space: JSON starts with '{' or '[', an event stream never does.
class ReplySink : public HttpBodySink {
 public:
  bool OnBody(std::string_view bytes) override {
    ++progress_;
    if (size_ + bytes.size() > kMaxBody) {
      error_ = fmt::format("the reply is larger than {} bytes", kMaxBody);
      return false;
    }
    size_ += bytes.size();
    if (!json_) {
      size_t first = bytes.find_first_not_of(" \t\r\n");
      if (first == std::string_view::npos && body_.empty()) return true;
      json_ = !body_.empty() || bytes[first] == '{' || bytes[first] == '[';
      if (!*json_) {
        // Replay what came before (white space only) and this piece through the parser.
        std::string pending = std::move(body_);
        body_.clear();
        return Feed(pending + std::string(bytes));
      }
    }
    if (*json_) {
      body_.append(bytes);
      return true;
    }
    return Feed(bytes);
  }
  uint64_t progress() const override { return progress_; }

  // The JSON-RPC messages the reply held, each as compact JSON.
  Result<std::vector<std::string>> Messages() {
    if (!error_.empty()) return MakeError(error_);
    if (!json_ || !*json_) return std::move(messages_);
    Result<rapidjson::Document> doc = ParseJson(body_, "the reply");
    if (!doc.ok()) return doc.error();
    std::vector<std::string> out;
    if (doc->IsArray()) {
      for (const rapidjson::Value& v : doc->GetArray()) out.push_back(ToJson(v));
    } else {
      out.push_back(ToJson(*doc));
    }
    return out;
  }
  const std::string& error() const { return error_; }

 private:
  bool Feed(std::string_view bytes) {
    Status fed = parser_.Feed(bytes, [this](SseEvent& ev) {
      if (ev.data.empty() || (!ev.event.empty() && ev.event != "message")) return;
      messages_.push_back(std::move(ev.data));
    });
    if (!fed.ok()) error_ = fed.message();
    return fed.ok();
  }

  std::optional<bool> json_;
  std::string body_;
  size_t size_ = 0;
  uint64_t progress_ = 0;
  SseParser parser_;
  std::vector<std::string> messages_;
  std::string error_;
};

}  // namespace

Result<std::unique_ptr<HttpTransport>> HttpTransport::Connect(const McpServerSpec& spec) {
  if (std::string why = UnusableUrl(spec.url); !why.empty()) {
    return MakeError(fmt::format("its url '{}' is not usable: {}", spec.url, why));
  }
  std::unique_ptr<HttpTransport> t(new HttpTransport());
  t->url_ = spec.url;
  if (!spec.bearer_token_env_var.empty()) {
    if (!spec.bearer_token || spec.bearer_token->empty()) {
      return MakeError(
          fmt::format("its bearer token variable `{}` is not set", spec.bearer_token_env_var));
    }
    if (std::string why = UnusableHeader("Authorization", *spec.bearer_token); !why.empty()) {
      return MakeError(fmt::format("the bearer token in `{}` holds a line break or NUL",
                                   spec.bearer_token_env_var));
    }
    t->headers_.push_back("Authorization: Bearer " + *spec.bearer_token);
  }
  for (const auto& [name, value] : spec.http_headers) {
    if (std::string why = UnusableHeader(name, value); !why.empty()) return MakeError(why);
    t->headers_.push_back(name + ": " + value);
  }
  return t;
}

void HttpTransport::StartReader(LineHandler on_line, CloseHandler on_close) {
  on_line_ = std::move(on_line);
  on_close_ = std::move(on_close);
}

void HttpTransport::Shutdown() {
  if (shut_down_.exchange(true)) return;
  if (on_close_) on_close_("has been shut down");
}

namespace {

// What is sent: a request needs its answer in the reply; initialize's answer fixes the
// protocol version for every later POST.
struct Sent {
  std::optional<std::string> request_id;  // a request's id, as JSON
  bool initialize = false;
};

Sent Inspect(const std::string& line) {
  Sent sent;
  if (Result<rapidjson::Document> doc = ParseJson(line, "message"); doc.ok() && doc->IsObject()) {
    auto id = doc->FindMember("id");
    auto method = doc->FindMember("method");
    if (id != doc->MemberEnd() && method != doc->MemberEnd() && !id->value.IsNull()) {
      sent.request_id = ToJson(id->value);
      sent.initialize =
          method->value.IsString() && std::string_view(method->value.GetString()) == "initialize";
    }
  }
  return sent;
}

// The POST of `line`, bounded by `bound` ms as a whole; the session's headers not yet added.
HttpRequest MakeRequest(const std::string& url, const std::string& line,
                        const std::vector<std::string>& headers, int64_t bound) {
  HttpRequest request;
  request.url = url;
  request.body = line;
  request.accept_json = true;
  request.headers = headers;
  request.headers.push_back("Content-Type: application/json");
  request.headers.push_back("Accept: application/json, text/event-stream");
  request.connect_timeout_ms = std::min(bound, kMaxConnectTimeoutMs);
  request.header_timeout_ms = bound;
  request.idle_timeout_ms = bound;
  request.total_timeout_ms = bound;
  return request;
}

// An error unless the transfer ended with a 2xx status.
Status TransferError(const HttpResponse& r, const std::string& url, int64_t bound,
                     const ReplySink& sink) {
  using O = HttpResponse::Outcome;
  switch (r.outcome) {
    case O::kCancelled:
      return MakeError("the request was cancelled");
    case O::kIdleTimeout:
    case O::kTotalTimeout:
      return MakeError(fmt::format("{} did not answer within {} ms", url, bound));
    case O::kTransportError:
      return MakeError(fmt::format("cannot reach {} ({})", url, r.error));
    case O::kAbortedBySink:
      return MakeError(fmt::format("{} sent a reply that cannot be read: {}", url, sink.error()));
    case O::kDone:
      break;
  }
  if (r.status < 200 || r.status >= 300) {
    std::string body = Excerpt(r.error_body);
    return MakeError(fmt::format("{} answered {}{}", url, StatusText(r.status),
                                 body.empty() ? "" : ": " + body));
  }
  return {};
}

// Whether `message` is the answer to the request `request_id`; *protocol_version: the
// protocolVersion of its result, if any.
bool IsAnswer(const std::string& message, const std::string& request_id,
              std::string* protocol_version) {
  Result<rapidjson::Document> doc = ParseJson(message, "message");
  if (!doc.ok() || !doc->IsObject() || doc->HasMember("method")) return false;
  auto id = doc->FindMember("id");
  if (id == doc->MemberEnd() || ToJson(id->value) != request_id) return false;
  auto result = doc->FindMember("result");
  if (result != doc->MemberEnd() && result->value.IsObject()) {
    *protocol_version = StringMember(result->value, "protocolVersion");
  }
  return true;
}

}  // namespace

Status HttpTransport::WriteLine(const std::string& line, int64_t timeout_ms, CancelToken* cancel) {
  if (shut_down_) return MakeError("the server has been shut down");
  const Sent sent = Inspect(line);
  const int64_t bound = std::max<int64_t>(1, timeout_ms);
  HttpRequest request = MakeRequest(url_, line, headers_, bound);
  {
    std::lock_guard lock(mu_);
    if (!session_id_.empty()) request.headers.push_back("Mcp-Session-Id: " + session_id_);
    if (!protocol_version_.empty()) {
      request.headers.push_back("MCP-Protocol-Version: " + protocol_version_);
    }
  }
  CancelToken never;
  HttpClient client;
  ReplySink sink;
  HttpResponse r = client.Post(request, sink, cancel != nullptr ? *cancel : never);
  if (Status ok = TransferError(r, url_, bound, sink); !ok.ok()) return ok;
  if (sent.initialize) {
    auto sid = r.headers.find("mcp-session-id");
    if (sid != r.headers.end()) {
      if (std::string why = UnusableHeader("Mcp-Session-Id", sid->second); !why.empty()) {
        return MakeError(fmt::format("{} sent a session id that cannot be sent back", url_));
      }
      std::lock_guard lock(mu_);
      session_id_ = sid->second;
    }
  }
  if (r.status == 202) {
    if (sent.request_id) {
      return MakeError(fmt::format("{} accepted the request without answering it", url_));
    }
    return {};
  }
  Result<std::vector<std::string>> messages = sink.Messages();
  if (!messages.ok()) {
    return MakeError(
        fmt::format("{} sent a reply that cannot be read: {}", url_, messages.message()));
  }
  bool answered = false;
  for (std::string& message : *messages) {
    std::string version;
    if (sent.request_id && IsAnswer(message, *sent.request_id, &version)) {
      answered = true;
      if (sent.initialize && !version.empty() &&
          UnusableHeader("MCP-Protocol-Version", version).empty()) {
        std::lock_guard lock(mu_);
        protocol_version_ = version;
      }
    }
    if (on_line_) on_line_(std::move(message));
  }
  if (sent.request_id && !answered) {
    return MakeError(fmt::format("{} replied without an answer to the request", url_));
  }
  return {};
}

}  // namespace ae
