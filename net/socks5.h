// The SOCKS5 side of the proxy (RFC 1928, no authentication): a command's other TCP (ssh,
// git://, databases) goes through it with ALL_PROXY=socks5h://, names resolved by the proxy.
// Only CONNECT is served: BIND and UDP ASSOCIATE are refused, so no UDP leaves through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/address.h"

namespace ae::net {

// SOCKS5 reply codes (RFC 1928 section 6) the proxy sends.
enum class Socks5Reply : uint8_t {
  kSucceeded = 0x00,
  kGeneralFailure = 0x01,
  kNotAllowed = 0x02,  // refused by the policy
  kNetworkUnreachable = 0x03,
  kHostUnreachable = 0x04,
  kConnectionRefused = 0x05,
  kTtlExpired = 0x06,
  kCommandNotSupported = 0x07,
  kAddressTypeNotSupported = 0x08,
};

struct Socks5Request {
  std::string host;  // a name (lower-cased, no trailing dot) or an IP literal's text
  bool host_is_name = false;
  uint16_t port = 0;
};

class Socks5Reader {
 public:
  enum class State {
    kNeedMore,  // feed more (send `reply` first when Feed filled it)
    kRequest,   // a CONNECT request: request(); the bytes after it are the tunnel's
    kFailed,    // a protocol error or a refused command: send `reply` (if any), then close
  };
  static constexpr size_t kMaxBytes = 1024;

  // Feeds the next client bytes. *reply is set to what must be sent to the client now (the
  // method selection after the greeting; the failure reply on kFailed), else left empty.
  // Returns how many bytes were consumed: fewer than `n` only on kRequest (the tunnel's
  // first bytes follow) or kFailed.
  size_t Feed(const char* data, size_t n, std::string* reply);
  State state() const { return state_; }
  const Socks5Request& request() const { return request_; }
  const std::string& error() const { return error_; }  // why kFailed, e.g. "UDP ASSOCIATE"

  // The reply to a CONNECT: `code`, and the bound address (0.0.0.0:0 when none is given).
  static std::string Reply(Socks5Reply code, const IpAddress* bound = nullptr, uint16_t port = 0);

 private:
  State state_ = State::kNeedMore;
  bool greeted_ = false;
  std::string buffer_;
  Socks5Request request_;
  std::string error_;
};

}  // namespace ae::net
