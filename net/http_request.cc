#include "net/http_request.h"

#include <arpa/inet.h>
#include <llhttp.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "net/host_name.h"

namespace ae::net {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// RFC 9110 tchar: llhttp lets a space before the colon through ("X : a"), which a server
// could read as another header than the one the proxy forwards.
bool IsTokenByte(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// "host[:port]" of an absolute-form URL or "host:port" of a CONNECT line into *head; the error
// otherwise.
std::string ParseAuthority(std::string_view authority, bool port_required, HttpRequestHead* head) {
  std::string_view host = authority;
  std::string_view port;
  bool has_port = false;
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return "an IPv6 literal's ']' is missing";
    if (close + 1 < host.size()) {
      if (host[close + 1] != ':') return "the host is not followed by ':port'";
      port = host.substr(close + 2);
      has_port = true;
    }
    host = host.substr(1, close - 1);
    // inet_pton wants a C string; an IPv6 literal is shorter than INET6_ADDRSTRLEN.
    char text[INET6_ADDRSTRLEN] = {};
    in6_addr addr{};
    if (host.empty() || host.size() >= sizeof text) return "the host is not an IPv6 address";
    std::memcpy(text, host.data(), host.size());
    if (::inet_pton(AF_INET6, text, &addr) != 1) return "the host is not an IPv6 address";
    // As sent (lower-cased), not re-formatted: the proxy compares it with the Host header.
    head->host = AsciiLower(host);
  } else {
    if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
      port = host.substr(colon + 1);
      host = host.substr(0, colon);
      has_port = true;
    }
    if (host.empty()) return "the host is missing";
    // A dotted quad passes as a name too; other IPv4 spellings ("127.1") stay names, which the
    // resolver answers and the policy checks like any other.
    std::string name = NormalizeHostName(host);
    if (name.empty()) return "the host is not a name";
    head->host = std::move(name);
  }
  if (!has_port) {
    if (port_required) return "CONNECT needs host:port";
    head->port = 80;
    return "";
  }
  unsigned value = 0;
  for (char c : port) {
    if (c < '0' || c > '9' || value > 65535) return "the port is not a number from 1 to 65535";
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (port.empty() || value == 0 || value > 65535) {
    return "the port is not a number from 1 to 65535";
  }
  head->port = static_cast<uint16_t>(value);
  return "";
}

// The target into *head: absolute-form http:// for a request, authority-form for CONNECT; or,
// in a tunnel the proxy terminated, origin-form.
std::string ParseTarget(HttpRequestHead* head, HttpRequestReader::Target form) {
  const std::string& target = head->target;
  if (form == HttpRequestReader::Target::kOrigin) {
    if (head->method == "CONNECT") return "a CONNECT inside a tunnel";
    if (!target.starts_with('/') && target != "*") return "the target is not a path";
    head->origin_form = target.substr(0, target.find('#'));
    return "";
  }
  if (head->method == "CONNECT") return ParseAuthority(target, /*port_required=*/true, head);
  if (target.starts_with('/') || target == "*") return "the request is for a server, not a proxy";
  const std::string start = AsciiLower(std::string_view(target).substr(0, 8));
  if (start.starts_with("https://")) {
    return "an https:// target is not sent to a proxy in the clear";
  }
  if (!start.starts_with("http://")) return "the target is not an http:// URL";
  const std::string_view rest = std::string_view(target).substr(7);
  const size_t path_at = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, path_at);
  // "http://allowed.test@evil.test/": which of the two is the host is where parsers disagree.
  if (authority.find('@') != std::string_view::npos) return "a user name in the URL is refused";
  if (std::string error = ParseAuthority(authority, /*port_required=*/false, head);
      !error.empty()) {
    return error;
  }
  head->scheme = "http";
  std::string path = path_at == std::string_view::npos ? "" : std::string(rest.substr(path_at));
  // The fragment is the client's own: a server is never sent one.
  if (const size_t hash = path.find('#'); hash != std::string::npos) path.erase(hash);
  if (!path.starts_with('/')) path.insert(0, "/");
  head->origin_form = std::move(path);
  return "";
}

// What llhttp's head leaves open that a proxy must not forward.
std::string CheckHead(HttpRequestHead* head, HttpRequestReader::Target form) {
  if (head->http_major != 1) return "the HTTP version is not 1.x";
  bool host_seen = false;
  for (const auto& [name, value] : head->headers) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsTokenByte)) {
      return "a header name is not a token";
    }
    // RFC 9112 section 3.2: a server may route by either of two Host headers, the proxy
    // checks the first.
    if (EqualsIgnoreCase(name, "host")) {
      if (host_seen) return "more than one Host header";
      host_seen = true;
    }
  }
  return ParseTarget(head, form);
}

}  // namespace

struct HttpRequestReader::Impl {
  llhttp_t parser{};
  llhttp_settings_t settings{};
  HttpRequestHead* head = nullptr;
  std::string field, value;
  bool head_done = false;
  bool message_done = false;
  size_t head_bytes = 0;  // the head's bytes so far

  static Impl* Of(llhttp_t* p) { return static_cast<Impl*>(p->data); }
};

HttpRequestReader::HttpRequestReader(Target form) : impl_(std::make_unique<Impl>()), form_(form) {
  Impl& impl = *impl_;
  impl.head = &head_;
  llhttp_settings_init(&impl.settings);
  // The data callbacks may come in pieces (a head split across Feed calls): they append.
  impl.settings.on_method = [](llhttp_t* p, const char* at, size_t n) {
    Impl::Of(p)->head->method.append(at, n);
    return 0;
  };
  impl.settings.on_url = [](llhttp_t* p, const char* at, size_t n) {
    Impl::Of(p)->head->target.append(at, n);
    return 0;
  };
  // Trailers of a chunked body come through the header callbacks too: they are not the head's
  // (the proxy forwards them as body bytes).
  impl.settings.on_header_field = [](llhttp_t* p, const char* at, size_t n) {
    Impl* impl = Impl::Of(p);
    if (!impl->head_done) impl->field.append(at, n);
    return 0;
  };
  impl.settings.on_header_value = [](llhttp_t* p, const char* at, size_t n) {
    Impl* impl = Impl::Of(p);
    if (!impl->head_done) impl->value.append(at, n);
    return 0;
  };
  // An empty value has no on_header_value: the end of the value is what delimits a header.
  impl.settings.on_header_value_complete = [](llhttp_t* p) {
    Impl* impl = Impl::Of(p);
    if (impl->head_done) return 0;
    // llhttp keeps trailing whitespace (and an obs-fold's space): not part of the value.
    while (impl->value.ends_with(' ') || impl->value.ends_with('\t')) impl->value.pop_back();
    impl->head->headers.emplace_back(std::move(impl->field), std::move(impl->value));
    impl->field.clear();
    impl->value.clear();
    return 0;
  };
  impl.settings.on_headers_complete = [](llhttp_t* p) {
    Impl* impl = Impl::Of(p);
    impl->head->http_major = llhttp_get_http_major(p);
    impl->head->http_minor = llhttp_get_http_minor(p);
    impl->head_done = true;
    return static_cast<int>(HPE_PAUSED);  // Feed checks the head before reading on
  };
  impl.settings.on_message_complete = [](llhttp_t* p) {
    Impl::Of(p)->message_done = true;
    // Stop here: what follows is a pipelined request (maybe for another host) or, after
    // CONNECT, the tunnel's bytes; llhttp_get_error_pos says where the request ended.
    return static_cast<int>(HPE_PAUSED);
  };
  llhttp_init(&impl.parser, HTTP_REQUEST, &impl.settings);
  impl.parser.data = &impl;
}

HttpRequestReader::~HttpRequestReader() = default;

size_t HttpRequestReader::Feed(const char* data, size_t n) {
  if (state_ != State::kHead && state_ != State::kBody) return 0;
  Impl& impl = *impl_;
  size_t used = 0;
  while (used < n) {
    // While the head is open llhttp is given no more than the head may still grow by, so an
    // endless head costs no more than kMaxHeadBytes however it is fed.
    size_t len = n - used;
    if (!impl.head_done) {
      len = std::min(len, kMaxHeadBytes - impl.head_bytes);
      if (len == 0) {
        state_ = State::kTooLarge;
        error_ = "the head is longer than " + std::to_string(kMaxHeadBytes) + " bytes";
        return used;
      }
    }
    const bool in_head = !impl.head_done;
    const llhttp_errno_t err = llhttp_execute(&impl.parser, data + used, len);
    if (err != HPE_OK && err != HPE_PAUSED && err != HPE_PAUSED_UPGRADE) {
      state_ = State::kMalformed;
      const char* reason = llhttp_get_error_reason(&impl.parser);
      error_ = AsciiLower(reason != nullptr ? reason : llhttp_errno_name(err));
      return used + len;
    }
    const size_t taken =
        err == HPE_OK ? len
                      : static_cast<size_t>(llhttp_get_error_pos(&impl.parser) - (data + used));
    used += taken;
    if (in_head) impl.head_bytes += taken;
    if (err == HPE_OK) continue;
    if (err == HPE_PAUSED && !impl.message_done) {
      // The pause at the head's end (on_headers_complete): no byte after it is read before
      // the head is found fit to forward.
      if (std::string why = CheckHead(&head_, form_); !why.empty()) {
        state_ = State::kMalformed;
        error_ = std::move(why);
        return used;
      }
      // Feed returns here, so the caller sends the head on before any body byte: it forwards
      // exactly what each later Feed consumes. A request without a body completes in the
      // one more run llhttp needs with no bytes at all.
      state_ = State::kBody;
      llhttp_resume(&impl.parser);
      const llhttp_errno_t end = llhttp_execute(&impl.parser, data + used, 0);
      if (end == HPE_PAUSED && impl.message_done) {
        state_ = State::kComplete;
      } else if (end != HPE_OK && end != HPE_PAUSED && end != HPE_PAUSED_UPGRADE) {
        state_ = State::kMalformed;  // e.g. a Transfer-Encoding it cannot frame
        const char* reason = llhttp_get_error_reason(&impl.parser);
        error_ = AsciiLower(reason != nullptr ? reason : llhttp_errno_name(end));
      }
      return used;
    }
    // The pause at the message's end. A CONNECT's ends with its head (llhttp ignores a
    // Content-Length there): the rest is the tunnel's.
    state_ = State::kComplete;
    return used;
  }
  return used;
}

const std::string* FindHeader(const HttpRequestHead& head, std::string_view name) {
  for (const auto& [field, value] : head.headers) {
    if (EqualsIgnoreCase(field, name)) return &value;
  }
  return nullptr;
}

}  // namespace ae::net
