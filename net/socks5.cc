#include "net/socks5.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <optional>

#include "net/host_name.h"

namespace ae::net {
namespace {

constexpr uint8_t kVersion = 5;
constexpr uint8_t kNoAuth = 0x00;
constexpr uint8_t kNoAcceptable = 0xff;
constexpr uint8_t kConnect = 1, kBind = 2, kUdpAssociate = 3;
constexpr uint8_t kIpv4 = 1, kDomain = 3, kIpv6 = 4;

// The longest message read: a request for a 255-byte name (VER CMD RSV ATYP LEN NAME PORT).
// Only the message being read is ever buffered, so the buffer stays within kMaxBytes.
constexpr size_t kLongestMessage = 5 + 255 + 2;
static_assert(kLongestMessage <= Socks5Reader::kMaxBytes);

// The text of an IP literal (inet_ntop's, so one spelling per address) or nullopt.
std::optional<std::string> LiteralText(int family, const void* bytes) {
  char text[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(family, bytes, text, sizeof text) == nullptr) return std::nullopt;
  return std::string(text);
}

// DST.ADDR of ATYP 3 into *request: a name, or an IP literal a client sent as text
// (socks5h:// sends the host as given). False if it is neither.
bool ParseDomain(std::string given, Socks5Request* request) {
  if (!given.empty() && given.back() == '.') given.pop_back();  // "127.0.0.1." is 127.0.0.1
  // inet_pton reads a C string: a NUL inside ("127.0.0.1\0.evil.test") would cut it short.
  if (given.find('\0') == std::string::npos) {
    in_addr v4{};
    in6_addr v6{};
    std::optional<std::string> text;
    if (::inet_pton(AF_INET, given.c_str(), &v4) == 1) {
      text = LiteralText(AF_INET, &v4);
    } else if (::inet_pton(AF_INET6, given.c_str(), &v6) == 1) {
      text = LiteralText(AF_INET6, &v6);
    }
    if (text) {
      request->host = std::move(*text);
      request->host_is_name = false;
      return true;
    }
  }
  std::string name = NormalizeHostName(given);
  if (name.empty()) return false;
  request->host = std::move(name);
  request->host_is_name = true;
  return true;
}

}  // namespace

size_t Socks5Reader::Feed(const char* data, size_t n, std::string* reply) {
  reply->clear();
  if (state_ != State::kNeedMore) return 0;
  size_t used = 0;
  // A failure's reply follows the method selection when both are due after this feed.
  auto fail = [&](std::string why, std::optional<Socks5Reply> code) {
    state_ = State::kFailed;
    error_ = std::move(why);
    if (code) *reply += Reply(*code);
    buffer_.clear();
    return used;
  };
  auto b = [&](size_t i) { return static_cast<uint8_t>(buffer_[i]); };
  // One message at a time (the greeting, then the request), taking from `data` no more than it
  // still needs, so what follows the request is left for the tunnel whatever the split.
  for (;;) {
    if (!buffer_.empty() && b(0) != kVersion) return fail("not a SOCKS5 client", std::nullopt);
    size_t want = 0;  // the message's length, as far as its bytes so far tell
    if (buffer_.empty()) {
      want = 1;  // VER alone first: anything but SOCKS5 is refused at its first byte
    } else if (!greeted_) {
      want = buffer_.size() < 2 ? 2 : 2 + b(1);  // VER NMETHODS METHODS
    } else if (buffer_.size() < 4) {
      want = 4;  // VER CMD RSV ATYP
    } else if (b(3) == kIpv4) {
      want = 4 + 4 + 2;
    } else if (b(3) == kIpv6) {
      want = 4 + 16 + 2;
    } else if (b(3) == kDomain) {
      if (buffer_.size() < 5) {
        want = 5;
      } else if (b(4) == 0) {
        return fail("the host name is empty", Socks5Reply::kGeneralFailure);
      } else {
        want = 5 + b(4) + 2;
      }
    } else {
      // Its length is unknown, so nothing after it can be read either.
      return fail("address type " + std::to_string(b(3)) + " is not supported",
                  Socks5Reply::kAddressTypeNotSupported);
    }
    if (buffer_.size() < want) {
      if (used == n) return used;
      const size_t take = std::min(want - buffer_.size(), n - used);
      buffer_.append(data + used, take);
      used += take;
      continue;
    }

    if (!greeted_) {
      const bool no_auth_offered = std::find(buffer_.begin() + 2, buffer_.end(),
                                             static_cast<char>(kNoAuth)) != buffer_.end();
      if (!no_auth_offered) {
        *reply += {static_cast<char>(kVersion), static_cast<char>(kNoAcceptable)};
        return fail("no acceptable authentication method", std::nullopt);
      }
      *reply += {static_cast<char>(kVersion), static_cast<char>(kNoAuth)};
      greeted_ = true;
      buffer_.clear();
      continue;
    }

    const uint8_t command = b(1);
    if (command == kBind) return fail("BIND is not supported", Socks5Reply::kCommandNotSupported);
    if (command == kUdpAssociate) {
      return fail("UDP ASSOCIATE is not supported", Socks5Reply::kCommandNotSupported);
    }
    if (command != kConnect) {
      return fail("command " + std::to_string(command) + " is not supported",
                  Socks5Reply::kCommandNotSupported);
    }
    request_.port = static_cast<uint16_t>(b(want - 2) << 8 | b(want - 1));
    if (request_.port == 0) return fail("the port is 0", Socks5Reply::kGeneralFailure);
    if (b(3) == kDomain) {
      if (!ParseDomain(buffer_.substr(5, b(4)), &request_)) {
        return fail("the host is not a name", Socks5Reply::kGeneralFailure);
      }
    } else {
      std::optional<std::string> text =
          LiteralText(b(3) == kIpv4 ? AF_INET : AF_INET6, buffer_.data() + 4);
      if (!text) return fail("the address cannot be formatted", Socks5Reply::kGeneralFailure);
      request_.host = std::move(*text);
      request_.host_is_name = false;
    }
    state_ = State::kRequest;
    buffer_.clear();
    return used;
  }
}

std::string Socks5Reader::Reply(Socks5Reply code, const IpAddress* bound, uint16_t port) {
  std::string out = {static_cast<char>(kVersion), static_cast<char>(code), 0};
  if (bound != nullptr && bound->family == AF_INET6) {
    out.push_back(static_cast<char>(kIpv6));
    out.append(reinterpret_cast<const char*>(bound->bytes), 16);
  } else {
    out.push_back(static_cast<char>(kIpv4));
    if (bound != nullptr && bound->family == AF_INET) {
      out.append(reinterpret_cast<const char*>(bound->bytes), 4);
    } else {
      out.append(4, '\0');
    }
  }
  out.push_back(static_cast<char>(port >> 8));
  out.push_back(static_cast<char>(port & 0xff));
  return out;
}

}  // namespace ae::net
