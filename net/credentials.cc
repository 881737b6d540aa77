#include "net/credentials.h"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "net/host_name.h"

namespace ae::net {
namespace {

constexpr size_t kMinValue = 8;

bool Printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

uint32_t RandomBelow(uint32_t n) {
  uint32_t r = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&r), sizeof r) != 1) {
    // No randomness: a dummy must still differ from the value; the fill below does.
    return 0;
  }
  return r % n;
}

// The letters and digits a dummy is drawn from: those the whole value uses (hex stays hex,
// a lower-case value stays lower-case), never a class per position, which would tell which
// characters of the secret are digits.
std::string Alphabet(std::string_view real) {
  bool digit = false, lower = false, upper = false, hex_only = true;
  for (char c : real) {
    digit = digit || (c >= '0' && c <= '9');
    lower = lower || (c >= 'a' && c <= 'z');
    upper = upper || (c >= 'A' && c <= 'Z');
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    hex_only = hex_only && (hex || std::isalnum(static_cast<unsigned char>(c)) == 0);
  }
  std::string set;
  if (digit) set += "0123456789";
  if (lower) set += hex_only ? "abcdef" : "abcdefghijklmnopqrstuvwxyz";
  if (upper) set += hex_only ? "ABCDEF" : "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  return set.empty() ? "0123456789abcdef" : set;
}

// Prefixes that name a token's kind, public in the vendors' documentation: a tool may check
// them, and they tell nothing of the secret. Any other leading text is drawn like the rest.
constexpr std::string_view kPublicPrefixes[] = {
    "github_pat_", "ghp_",  "gho_",  "ghu_",  "ghs_",     "ghr_",     "glpat-", "glcbt-", "gldt-",
    "glptt-",      "glrt-", "xoxb-", "xoxp-", "sk_live_", "sk_test_", "npm_",   "pypi-"};

bool Contains(std::string_view hay, std::string_view needle) {
  return !needle.empty() && hay.find(needle) != std::string_view::npos;
}

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  for (size_t at = s->find(from); at != std::string::npos; at = s->find(from, at + to.size())) {
    s->replace(at, from.size(), to);
  }
}

bool IsBasic(std::string_view value, std::string_view* encoded) {
  if (value.size() < 6 || AsciiLower(value.substr(0, 6)) != "basic ") return false;
  *encoded = value.substr(6);
  while (!encoded->empty() && encoded->front() == ' ') encoded->remove_prefix(1);
  return true;
}

// The user of a "{basic:USER}" in a header template, or nullopt when it has none.
std::optional<std::string> BasicUser(std::string_view text) {
  const size_t at = text.find("{basic:");
  if (at == std::string_view::npos) return std::nullopt;
  const size_t end = text.find('}', at);
  if (end == std::string_view::npos) return std::nullopt;
  return std::string(text.substr(at + 7, end - at - 7));
}

// `text` with {value} as `value` and {basic:USER} as base64 of "USER:value".
std::string Expand(const std::string& text, const std::string& value) {
  std::string out = text;
  ReplaceAll(&out, "{value}", value);
  if (std::optional<std::string> user = BasicUser(out)) {
    ReplaceAll(&out, "{basic:" + *user + "}", Base64Encode(*user + ":" + value));
  }
  return out;
}

bool HopByHop(const std::string& lower, bool covered) {
  if (lower == "proxy-connection" || lower == "proxy-authorization" || lower == "connection" ||
      lower == "keep-alive") {
    return true;
  }
  return covered && (lower == "expect" || lower == "accept-encoding" || lower == "te");
}

}  // namespace

std::string MakeDummy(std::string_view real) {
  size_t keep = 0;
  for (std::string_view prefix : kPublicPrefixes) {
    if (real.size() > prefix.size() && real.starts_with(prefix)) keep = prefix.size();
  }
  const std::string set = Alphabet(real);
  std::string dummy(real.substr(0, keep));
  for (size_t i = keep; i < real.size(); ++i) {
    const char c = real[i];
    // Punctuation keeps its place (a UUID's dashes): the value's shape, not its content.
    dummy += std::isalnum(static_cast<unsigned char>(c)) != 0
                 ? set[RandomBelow(static_cast<uint32_t>(set.size()))]
                 : c;
  }
  if (dummy == real) {
    // Every position drew its own character again (or randomness failed): flip one digit or
    // letter deterministically, within its class.
    for (size_t i = keep; i < dummy.size(); ++i) {
      char& c = dummy[i];
      if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
        c = c == '0' ? '1' : c == 'a' ? 'b' : c == 'A' ? 'B' : static_cast<char>(c - 1);
        break;
      }
    }
  }
  return dummy;
}

Result<std::unique_ptr<Broker>> Broker::Create(
    const std::vector<CredentialSpec>& specs, const std::function<const char*(const char*)>& lookup,
    std::unique_ptr<TlsAuthority> authority) {
  std::unique_ptr<Broker> broker(new Broker());
  broker->authority_ = std::move(authority);
  for (const CredentialSpec& spec : specs) {
    const std::string where = fmt::format("network.credentials.{}", spec.name);
    Credential c;
    c.name = spec.name;
    c.env = spec.env;
    if (spec.env.empty()) return MakeError(where + ": env names no variable");
    if (spec.hosts.empty()) return MakeError(where + ": hosts is empty");
    for (const std::string& host : spec.hosts) {
      // A preset names many hosts, some shared by every tenant (a cloud's storage): a secret
      // goes to hosts named one by one.
      if (host.starts_with("@")) {
        return MakeError(
            fmt::format("{}.hosts: '{}': a preset cannot carry a credential; name "
                        "its hosts",
                        where, host));
      }
    }
    Result<std::vector<HostRule>> hosts = ParseRules(spec.hosts, /*deny=*/false);
    if (!hosts.ok()) return MakeError(fmt::format("{}.hosts: {}", where, hosts.message()));
    c.hosts = std::move(*hosts);
    const char* value = lookup(spec.env.c_str());
    if (value == nullptr || *value == '\0') {
      return MakeError(fmt::format("{}: the variable {} is not set", where, spec.env));
    }
    c.real = value;
    if (c.real.size() < kMinValue) {
      return MakeError(
          fmt::format("{}: the value of {} is shorter than {} characters; a dummy "
                      "that short could be guessed",
                      where, spec.env, kMinValue));
    }
    if (!Printable(c.real)) {
      return MakeError(
          fmt::format("{}: the value of {} holds a space or a control character; "
                      "it cannot go into a header",
                      where, spec.env));
    }
    if (!spec.header.empty()) {
      const size_t colon = spec.header.find(':');
      const std::string name = colon == std::string::npos ? "" : spec.header.substr(0, colon);
      std::string text = colon == std::string::npos ? "" : spec.header.substr(colon + 1);
      while (!text.empty() && text.front() == ' ') text.erase(0, 1);
      const bool name_ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '-';
      });
      const std::optional<std::string> user = BasicUser(text);
      const bool user_ok =
          user && !user->empty() && user->find(':') == std::string::npos && Printable(*user);
      if (!name_ok || !(Contains(text, "{value}") || user_ok) ||
          std::any_of(text.begin(), text.end(), [](char ch) { return ch < 0x20 || ch == 0x7f; })) {
        return MakeError(fmt::format(
            R"({}.header: expected "Name: text with {{value}} or {{basic:USER}}", got "{}")", where,
            spec.header));
      }
      c.header_name = name;
      c.header_template = text;
    }
    c.dummy = MakeDummy(c.real);
    for (const Credential& other : broker->credentials_) {
      // One secret may serve two credentials (a token for git and for the API); one that
      // holds another would be filtered out of responses ambiguously.
      if (other.real != c.real && (Contains(other.real, c.real) || Contains(c.real, other.real))) {
        return MakeError(fmt::format("{}: its value overlaps that of network.credentials.{}", where,
                                     other.name));
      }
    }
    broker->credentials_.push_back(std::move(c));
  }
  return broker;
}

namespace {

bool CoversHost(const Credential& c, std::string_view host, uint16_t port) {
  return std::any_of(c.hosts.begin(), c.hosts.end(),
                     [&](const HostRule& r) { return AllowRuleMatches(r, host, port); });
}

}  // namespace

bool Broker::Covers(std::string_view host, uint16_t port) const {
  return std::any_of(credentials_.begin(), credentials_.end(),
                     [&](const Credential& c) { return CoversHost(c, host, port); });
}

namespace {

// `value` with `c`'s dummy put back as the real value, when it holds it in a form a client sends
// a credential in: the whole value (PRIVATE-TOKEN: D), "Scheme D" (Bearer, token) or Basic auth
// of "user:D"; nullopt for any other place (a Basic blob of D alone, "ab:Dzz", D inside other
// text), which a server could reflect in a form the response filter does not know.
std::optional<std::string> Substituted(std::string_view value, const Credential& c) {
  if (value == c.dummy) return c.real;
  std::string_view encoded;
  std::string decoded;
  if (IsBasic(value, &encoded)) {
    if (!Base64Decode(encoded, &decoded)) return std::nullopt;
    const size_t colon = decoded.find(':');
    if (colon == std::string::npos || decoded.substr(colon + 1) != c.dummy ||
        Contains(decoded.substr(0, colon), c.dummy)) {
      return std::nullopt;
    }
    return "Basic " + Base64Encode(decoded.substr(0, colon + 1) + c.real);
  }
  const size_t space = value.find(' ');
  if (space == std::string_view::npos || value.substr(space + 1) != c.dummy) return std::nullopt;
  const std::string_view scheme = value.substr(0, space);
  if (scheme.empty() || !std::all_of(scheme.begin(), scheme.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '-' || ch == '_';
      })) {
    return std::nullopt;
  }
  return std::string(value.substr(0, space + 1)) + c.real;
}

// Whether `value` holds `c`'s dummy anywhere, Basic auth's decoded text included.
bool CarriesDummy(std::string_view value, const Credential& c) {
  std::string_view encoded;
  std::string decoded;
  return Contains(value, c.dummy) || (IsBasic(value, &encoded) && Base64Decode(encoded, &decoded) &&
                                      Contains(decoded, c.dummy));
}

}  // namespace

Status Broker::RewriteHeaders(const HttpRequestHead& head, std::string_view host, uint16_t port,
                              bool tls, std::string* out, std::vector<std::string>* used) const {
  // A credential goes into a request only over TLS to its host (verified upstream): in the
  // clear anyone on the path, or a forged answer to the proxy's resolver, would have it.
  auto injects = [&](const Credential& c) { return tls && CoversHost(c, host, port); };
  auto refuse = [&](const Credential& c, std::string_view where) {
    if (CoversHost(c, host, port)) {
      return MakeError(fmt::format(
          "{} carries the dummy of credential '{}' in plain HTTP; it goes to its hosts only "
          "over TLS",
          where, c.name));
    }
    return MakeError(
        fmt::format("{} carries the dummy of credential '{}', which goes only to its own hosts",
                    where, c.name));
  };
  for (const Credential& c : credentials_) {
    if (Contains(head.target, c.dummy)) return refuse(c, "the request's target");
  }
  auto note = [&](const Credential& c) {
    if (std::find(used->begin(), used->end(), c.name) == used->end()) used->push_back(c.name);
  };
  const bool covered = tls && Covers(host, port);
  for (const auto& [name, raw] : head.headers) {
    const std::string lower = AsciiLower(name);
    if (HopByHop(lower, covered)) continue;
    bool templated = false;
    for (const Credential& c : credentials_) {
      templated =
          templated || (!c.header_name.empty() && AsciiLower(c.header_name) == lower && injects(c));
    }
    if (templated) continue;
    std::string value = raw;
    for (const Credential& c : credentials_) {
      if (!CarriesDummy(value, c)) continue;
      if (!injects(c)) return refuse(c, fmt::format("the header {}", name));
      std::optional<std::string> real = Substituted(value, c);
      if (!real) {
        return MakeError(fmt::format(
            "the header {} carries the dummy of credential '{}' in a form the broker does not "
            "rewrite (the whole value, \"Scheme DUMMY\", or Basic auth of user:DUMMY)",
            name, c.name));
      }
      value = std::move(*real);
      note(c);
    }
    out->append(name).append(": ").append(value).append("\r\n");
  }
  for (const Credential& c : credentials_) {
    if (c.header_name.empty() || !injects(c)) continue;
    out->append(c.header_name)
        .append(": ")
        .append(Expand(c.header_template, c.real))
        .append("\r\n");
    note(c);
  }
  return {};
}

Status ForwardHeaders(const Broker* broker, const HttpRequestHead& head, std::string_view host,
                      uint16_t port, bool tls, std::string* out, std::vector<std::string>* used) {
  if (broker != nullptr) return broker->RewriteHeaders(head, host, port, tls, out, used);
  for (const auto& [name, value] : head.headers) {
    if (HopByHop(AsciiLower(name), false)) continue;
    out->append(name).append(": ").append(value).append("\r\n");
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> Broker::ResponseForms(
    std::string_view host, uint16_t port, const HttpRequestHead& head) const {
  std::vector<std::pair<std::string, std::string>> forms;
  // A server may answer with what it was sent, in the form it was sent: the value, and Basic
  // auth's base64 of "user:value".
  std::vector<std::string> users;
  for (const auto& [name, raw] : head.headers) {
    std::string_view encoded;
    std::string decoded;
    if (AsciiLower(name) == "authorization" && IsBasic(raw, &encoded) &&
        Base64Decode(encoded, &decoded)) {
      users.push_back(decoded.substr(0, decoded.find(':')));
    }
  }
  for (const Credential& c : credentials_) {
    if (!CoversHost(c, host, port)) continue;
    forms.emplace_back(c.real, c.dummy);
    if (std::optional<std::string> user = BasicUser(c.header_template)) users.push_back(*user);
    for (const std::string& user : users) {
      forms.emplace_back(Base64Encode(user + ":" + c.real), Base64Encode(user + ":" + c.dummy));
    }
  }
  return forms;
}

std::vector<std::string> Broker::Environment() const {
  std::vector<std::string> env;
  for (const Credential& c : credentials_) env.push_back(c.env + "=" + c.dummy);
  return env;
}

StreamFilter::StreamFilter(std::vector<std::pair<std::string, std::string>> forms)
    : forms_(std::move(forms)) {
  for (const auto& [from, to] : forms_) hold_ = std::max(hold_, from.size());
  if (hold_ > 0) --hold_;
}

std::string StreamFilter::Feed(std::string_view data) {
  pending_.append(data);
  for (const auto& [from, to] : forms_) {
    for (size_t at = pending_.find(from); at != std::string::npos;
         at = pending_.find(from, at + to.size())) {
      pending_.replace(at, from.size(), to);
      ++replaced_;
    }
  }
  if (pending_.size() <= hold_) return "";
  std::string out = pending_.substr(0, pending_.size() - hold_);
  pending_.erase(0, pending_.size() - hold_);
  return out;
}

std::string StreamFilter::Finish() {
  // A stream that ends inside a value (a truncated response) must not hand out its first
  // characters: an unfinished form becomes the same prefix of its replacement.
  for (const auto& [from, to] : forms_) {
    for (size_t k = std::min(pending_.size(), from.size() - 1); k > 0; --k) {
      if (std::string_view(pending_).substr(pending_.size() - k) ==
          std::string_view(from).substr(0, k)) {
        pending_.replace(pending_.size() - k, k, to.substr(0, k));
        break;
      }
    }
  }
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace ae::net
