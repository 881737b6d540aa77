// A request a command sends the proxy (HTTP_PROXY): its head parsed by llhttp, the HTTP/1.x
// parser of Node.js, and its body followed to its end, so the proxy forwards exactly one
// request per connection and never mistakes a pipelined second request (for another host)
// for body bytes of the first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ae::net {

struct HttpRequestHead {
  std::string method;  // as llhttp names it: "GET", "CONNECT", ...
  std::string target;  // the request target as sent
  // From the target: absolute-form ("http://Host:8080/p?q") or, for CONNECT, authority-form
  // ("host:443", "[::1]:443"). Lower-cased, no trailing dot, brackets of an IPv6 literal
  // taken off.
  std::string host;
  uint16_t port = 0;        // the target's port, else 80 for http://
  std::string scheme;       // "http" for absolute-form, "" for CONNECT
  std::string origin_form;  // "/p?q" ("/" when the target has no path), "" for CONNECT
  std::vector<std::pair<std::string, std::string>> headers;  // names and values as sent
  int http_major = 1;
  int http_minor = 1;
};

class HttpRequestReader {
 public:
  enum class State {
    kHead,       // the head is not complete yet
    kBody,       // the head is complete (head()); the body is still arriving
    kComplete,   // the whole request (for CONNECT: the head; what follows is the tunnel's)
    kMalformed,  // error() says why
    kTooLarge,   // the head is longer than kMaxHeadBytes
  };
  static constexpr size_t kMaxHeadBytes = 64 * 1024;

  // kProxy: a request to the proxy (absolute-form, or CONNECT's authority-form); kOrigin: a
  // request to a server, inside a tunnel the proxy terminated (origin-form "/p?q" or "*";
  // host and port stay unset: the tunnel's are the request's).
  enum class Target { kProxy, kOrigin };
  explicit HttpRequestReader(Target form = Target::kProxy);
  ~HttpRequestReader();
  HttpRequestReader(const HttpRequestReader&) = delete;
  HttpRequestReader& operator=(const HttpRequestReader&) = delete;

  // Feeds the next bytes from the client and returns how many of them it read: it stops at
  // the end of the head (state kBody, or kComplete for a request without a body), so the
  // caller forwards the head before any body byte and then exactly what each later call
  // consumes; and at the end of the request (kComplete: the rest is a pipelined request or,
  // after CONNECT, the tunnel's first bytes). On an error, what it read up to there.
  size_t Feed(const char* data, size_t n);
  State state() const { return state_; }
  // Valid from kBody on. A target that is neither absolute-form http:// nor (for CONNECT)
  // authority-form is kMalformed: "https://..." targets, origin-form "/p" (a request meant for
  // a server, not a proxy) and userinfo ("http://user@host/") are refused.
  const HttpRequestHead& head() const { return head_; }
  // Why kMalformed or kTooLarge.
  const std::string& error() const { return error_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Target form_;
  State state_ = State::kHead;
  HttpRequestHead head_;
  std::string error_;
};

// The value of the first header `name` (ASCII case-insensitive), or nullptr.
const std::string* FindHeader(const HttpRequestHead& head, std::string_view name);

}  // namespace ae::net
