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

Status HttpTransport::WriteLine(const std::string& line, int64_t timeout_ms, CancelToken* cancel) {
  if (shut_down_) return MakeError("the server has been shut down");
  // What is sent: a request needs its answer in the reply; initialize's answer fixes the
  // protocol version for every later POST.
  std::optional<std::string> request_id;
  bool initialize = false;
  if (Result<rapidjson::Document> sent = ParseJson(line, "message");
      sent.ok() && sent->IsObject()) {
    auto id = sent->FindMember("id");
    auto method = sent->FindMember("method");
    if (id != sent->MemberEnd() && method != sent->MemberEnd() && !id->value.IsNull()) {
      request_id = ToJson(id->value);
      initialize =
          method->value.IsString() && std::string_view(method->value.GetString()) == "initialize";
    }
  }

  HttpRequest request;
  request.url = url_;
  request.body = line;
  request.accept_json = true;
  request.headers = headers_;
  request.headers.push_back("Content-Type: application/json");
  request.headers.push_back("Accept: application/json, text/event-stream");
  {
    std::lock_guard lock(mu_);
    if (!session_id_.empty()) request.headers.push_back("Mcp-Session-Id: " + session_id_);
    if (!protocol_version_.empty()) {
      request.headers.push_back("MCP-Protocol-Version: " + protocol_version_);
    }
  }
  const int64_t bound = std::max<int64_t>(1, timeout_ms);
  request.connect_timeout_ms = std::min(bound, kMaxConnectTimeoutMs);
  request.header_timeout_ms = bound;
  request.idle_timeout_ms = bound;
  request.total_timeout_ms = bound;

  CancelToken never;
  HttpClient client;
  ReplySink sink;
  HttpResponse r = client.Post(request, sink, cancel != nullptr ? *cancel : never);
  using O = HttpResponse::Outcome;
  switch (r.outcome) {
    case O::kCancelled:
      return MakeError("the request was cancelled");
    case O::kIdleTimeout:
    case O::kTotalTimeout:
      return MakeError(fmt::format("{} did not answer within {} ms", url_, bound));
    case O::kTransportError:
      return MakeError(fmt::format("cannot reach {} ({})", url_, r.error));
    case O::kAbortedBySink:
      return MakeError(fmt::format("{} sent a reply that cannot be read: {}", url_, sink.error()));
    case O::kDone:
      break;
  }
  if (r.status < 200 || r.status >= 300) {
    std::string body = Excerpt(r.error_body);
    return MakeError(fmt::format("{} answered {}{}", url_, StatusText(r.status),
                                 body.empty() ? "" : ": " + body));
  }
  if (initialize) {
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
    if (request_id) {
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
    if (request_id) {
      Result<rapidjson::Document> doc = ParseJson(message, "message");
      if (doc.ok() && doc->IsObject() && !doc->HasMember("method")) {
        auto id = doc->FindMember("id");
        if (id != doc->MemberEnd() && ToJson(id->value) == *request_id) {
          answered = true;
          if (initialize) {
            auto result = doc->FindMember("result");
            if (result != doc->MemberEnd() && result->value.IsObject()) {
              std::string version = StringMember(result->value, "protocolVersion");
              if (!version.empty() && UnusableHeader("MCP-Protocol-Version", version).empty()) {
                std::lock_guard lock(mu_);
                protocol_version_ = version;
              }
            }
          }
        }
      }
    }
    if (on_line_) on_line_(std::move(message));
  }
  if (request_id && !answered) {
    return MakeError(fmt::format("{} replied without an answer to the request", url_));
  }
  return {};
}

}  // namespace ae
