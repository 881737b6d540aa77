// The credential broker: a secret a command needs (a push token, a registry's) never enters
// the sandbox. Commands get a dummy of the same length and shape in its variable; the egress
// proxy puts the real value in place of the dummy in the request headers it sends to that
// credential's hosts (terminating their TLS with the run's CA, net/tls_authority.h), and puts
// the dummy back in place of the real value in everything those hosts answer. A dummy headed
// anywhere else is refused.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/base64.h"
#include "base/result.h"
#include "net/http_request.h"
#include "net/policy.h"
#include "net/tls_authority.h"

namespace ae::net {

// One [network.credentials.NAME], as configured.
struct CredentialSpec {
  std::string name;
  std::vector<std::string> hosts;  // the same patterns as network.allow
  std::string env;                 // the variable of agentexec's environment holding the value
  // "" or "Name: text" set on every request, the text holding {value} (the value) or
  // {basic:USER} (Basic auth's base64 of "USER:value").
  std::string header;
};

struct Credential {
  std::string name;
  std::vector<HostRule> hosts;
  std::string env;
  std::string header_name, header_template;  // from `header`
  std::string real, dummy;                   // same length; the real value never leaves here
};

// A dummy for `real`: the same length, punctuation where it has punctuation, a vendor's public
// prefix kept ("ghs_", "glpat-"), every other character drawn at random from the letters and
// digits the whole value uses (so hex stays hex), so a tool that checks a token's form accepts
// it while it tells nothing of the value. Never equal to `real`.
std::string MakeDummy(std::string_view real);

class Broker {
 public:
  // Reads each credential's value from `lookup` (the environment). Errors name the credential:
  // an unset or empty variable, a value shorter than 8 characters or holding anything but
  // printable ASCII (it goes into a header), a malformed host pattern or header template.
  static Result<std::unique_ptr<Broker>> Create(
      const std::vector<CredentialSpec>& specs,
      const std::function<const char*(const char*)>& lookup,
      std::unique_ptr<TlsAuthority> authority);

  const std::vector<Credential>& credentials() const { return credentials_; }
  TlsAuthority& authority() { return *authority_; }
  // Whether a connection to `host`:`port` carries a credential (its TLS is then terminated).
  bool Covers(std::string_view host, uint16_t port) const;

  // The request's headers with each covering credential's dummy replaced by its real value
  // and each `header` template set, appended to *out (ForwardHeaders); only over TLS (`tls`:
  // a terminated tunnel), never in plain HTTP. A dummy is replaced only where a client sends
  // a credential: a header's whole value, "Scheme DUMMY", or Basic auth of "user:DUMMY" (the
  // forms ResponseForms knows). *used gets the credentials' names. An error when the target,
  // or a header, carries a dummy anywhere else, for a host its credential does not cover, or
  // in plain HTTP: the request must not leave.
  Status RewriteHeaders(const HttpRequestHead& head, std::string_view host, uint16_t port, bool tls,
                        std::string* out, std::vector<std::string>* used) const;
  // What a response from `host`:`port` may not carry: each covering credential's real value
  // and its Basic forms, each with the dummy form of the same length to put in its place.
  std::vector<std::pair<std::string, std::string>> ResponseForms(std::string_view host,
                                                                 uint16_t port,
                                                                 const HttpRequestHead& head) const;

  // NAME=dummy for each credential's variable, for the commands' environment.
  std::vector<std::string> Environment() const;

 private:
  std::vector<Credential> credentials_;
  std::unique_ptr<TlsAuthority> authority_;
};

// The headers the proxy sends on for `head` as "Name: value\r\n" lines: hop-by-hop ones left
// out (Proxy-*, Connection, Keep-Alive; and where a credential covers the host, Expect, TE and
// Accept-Encoding, so a reflected value is never compressed past the response filter), through
// `broker`'s rewrite when there is one.
Status ForwardHeaders(const Broker* broker, const HttpRequestHead& head, std::string_view host,
                      uint16_t port, bool tls, std::string* out, std::vector<std::string>* used);

// Replaces every `from` with its `to` (same length) in a stream, across chunk boundaries: it
// holds back at most the longest `from` less one byte until more comes or Finish.
class StreamFilter {
 public:
  explicit StreamFilter(std::vector<std::pair<std::string, std::string>> forms);
  // The filtered bytes that can go out now.
  std::string Feed(std::string_view data);
  std::string Finish();
  uint64_t replaced() const { return replaced_; }

 private:
  std::vector<std::pair<std::string, std::string>> forms_;
  size_t hold_ = 0;
  std::string pending_;
  uint64_t replaced_ = 0;
};

}  // namespace ae::net
