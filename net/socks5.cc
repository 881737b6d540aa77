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

// Why the client is refused, and the reply it gets (none: the connection just closes).
struct Failure {
  std::string why;
  std::optional<Socks5Reply> code;
};

uint8_t ByteAt(const std::string& buffer, size_t i) {
  return static_cast<uint8_t>(buffer[i]);
}

// The length of the message being read (the greeting, then the request), as far as its bytes
// so far tell; 0, with *failure set, when it can never be read.
size_t MessageLength(const std::string& buffer, bool greeted, Failure* failure) {
  auto b = [&](size_t i) { return ByteAt(buffer, i); };
  if (buffer.empty())
    return 1;  // VER alone first: anything but SOCKS5 is refused at its first byte
  if (b(0) != kVersion) {
    *failure = {"not a SOCKS5 client", std::nullopt};
    return 0;
  }
  if (!greeted) return buffer.size() < 2 ? 2 : 2 + b(1);  // VER NMETHODS METHODS
  if (buffer.size() < 4) return 4;                        // VER CMD RSV ATYP
  if (b(3) == kIpv4) return 4 + 4 + 2;
  if (b(3) == kIpv6) return 4 + 16 + 2;
  if (b(3) == kDomain) {
    if (buffer.size() < 5) return 5;
    if (b(4) != 0) return 5 + b(4) + 2;
    *failure = {"the host name is empty", Socks5Reply::kGeneralFailure};
    return 0;
  }
  // Its length is unknown, so nothing after it can be read either.
  *failure = {"address type " + std::to_string(b(3)) + " is not supported",
              Socks5Reply::kAddressTypeNotSupported};
  return 0;
}

// The whole greeting: the method selection goes into *reply.
std::optional<Failure> ReadGreeting(const std::string& buffer, std::string* reply) {
  const bool no_auth_offered =
      std::find(buffer.begin() + 2, buffer.end(), static_cast<char>(kNoAuth)) != buffer.end();
  if (!no_auth_offered) {
    *reply += {static_cast<char>(kVersion), static_cast<char>(kNoAcceptable)};
    return Failure{"no acceptable authentication method", std::nullopt};
  }
  *reply += {static_cast<char>(kVersion), static_cast<char>(kNoAuth)};
  return std::nullopt;
}

// The whole request, `length` bytes: a CONNECT's destination into *request.
std::optional<Failure> ReadRequest(const std::string& buffer, size_t length,
                                   Socks5Request* request) {
  auto b = [&](size_t i) { return ByteAt(buffer, i); };
  const uint8_t command = b(1);
  if (command == kBind) return Failure{"BIND is not supported", Socks5Reply::kCommandNotSupported};
  if (command == kUdpAssociate) {
    return Failure{"UDP ASSOCIATE is not supported", Socks5Reply::kCommandNotSupported};
  }
  if (command != kConnect) {
    return Failure{"command " + std::to_string(command) + " is not supported",
                   Socks5Reply::kCommandNotSupported};
  }
  request->port = static_cast<uint16_t>(b(length - 2) << 8 | b(length - 1));
  if (request->port == 0) return Failure{"the port is 0", Socks5Reply::kGeneralFailure};
  if (b(3) == kDomain) {
    if (!ParseDomain(buffer.substr(5, b(4)), request)) {
      return Failure{"the host is not a name", Socks5Reply::kGeneralFailure};
    }
    return std::nullopt;
  }
  std::optional<std::string> text =
      LiteralText(b(3) == kIpv4 ? AF_INET : AF_INET6, buffer.data() + 4);
  if (!text) return Failure{"the address cannot be formatted", Socks5Reply::kGeneralFailure};
  request->host = std::move(*text);
  request->host_is_name = false;
  return std::nullopt;
}

}  // namespace

size_t Socks5Reader::Feed(const char* data, size_t n, std::string* reply) {
  reply->clear();
  if (state_ != State::kNeedMore) return 0;
  size_t used = 0;
  // A failure's reply follows the method selection when both are due after this feed.
  auto fail = [&](Failure failure) {
    state_ = State::kFailed;
    error_ = std::move(failure.why);
    if (failure.code) *reply += Reply(*failure.code);
    buffer_.clear();
    return used;
  };
  // One message at a time (the greeting, then the request), taking from `data` no more than it
  // still needs, so what follows the request is left for the tunnel whatever the split.
  for (;;) {
    Failure failure;
    const size_t want = MessageLength(buffer_, greeted_, &failure);
    if (want == 0) return fail(std::move(failure));
    if (buffer_.size() < want) {
      if (used == n) return used;
      const size_t take = std::min(want - buffer_.size(), n - used);
      buffer_.append(data + used, take);
      used += take;
      continue;
    }
    if (!greeted_) {
      if (std::optional<Failure> refused = ReadGreeting(buffer_, reply)) {
        return fail(std::move(*refused));
      }
      greeted_ = true;
      buffer_.clear();
      continue;
    }
    if (std::optional<Failure> refused = ReadRequest(buffer_, want, &request_)) {
      return fail(std::move(*refused));
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
