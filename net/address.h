// Which addresses the egress proxy may dial: every address a name resolves to, or an IP
// literal a command names, is classified, and the classes below are refused unless the policy
// allows private addresses or lists that literal (net/policy.h). An embedded IPv4 address
// (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16)
// is classified as that IPv4 address, so no IPv6 spelling reaches what the IPv4 one cannot.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ae::net {

// One IPv4 or IPv6 address (no port), as the proxy dials it.
struct IpAddress {
  int family = 0;          // AF_INET or AF_INET6
  uint8_t bytes[16] = {};  // network order; the first 4 for AF_INET
  bool operator==(const IpAddress& other) const;
};

enum class AddressClass {
  kPublic,       // none of the below: dialled when the policy allows the host
  kUnspecified,  // 0.0.0.0/8, ::
  kLoopback,     // 127.0.0.0/8, ::1
  kPrivate,      // 10/8, 172.16/12, 192.168/16, fc00::/7 (unique local)
  kLinkLocal,    // 169.254/16 but the metadata address, fe80::/10
  kMetadata,     // 169.254.169.254, fd00:ec2::254 (cloud instance metadata)
  kCgnat,        // 100.64.0.0/10 (carrier-grade NAT, RFC 6598)
  kMulticast,    // 224/4, ff00::/8
  kReserved,     // 240/4 and 255.255.255.255, 192.0.0/24, 198.18/15 (benchmarking), fec0::/10
  kThisHost,     // an address of one of this host's interfaces (LocalAddresses)
};

// "loopback", "private", "link-local", "metadata", "CGNAT", "multicast", "reserved",
// "unspecified", "this host", "public": for events and the denial the model reads.
std::string_view AddressClassName(AddressClass c);

// The class of `address` by its value alone (never kThisHost).
AddressClass Classify(const IpAddress& address);

// This host's own addresses, asked once (getifaddrs): a name that resolves to one of them
// reaches a service of this host. An interface so tests can give a fixed list.
class LocalAddresses {
 public:
  virtual ~LocalAddresses() = default;
  virtual bool Contains(const IpAddress& address) const = 0;
};
// getifaddrs(3) now; a failure leaves the list empty and says why in *error.
std::unique_ptr<LocalAddresses> SystemLocalAddresses(std::string* error);
std::unique_ptr<LocalAddresses> FixedLocalAddresses(std::vector<IpAddress> addresses);

// Classify, and kThisHost where `local` has the address (value classes win: 127.0.0.1 is
// kLoopback, not kThisHost).
AddressClass Classify(const IpAddress& address, const LocalAddresses& local);

// An IP literal as a URL, a CONNECT line or SOCKS5 gives it: "192.0.2.1", "2001:db8::1",
// "[2001:db8::1]" (brackets optional). Only the canonical dotted quad for IPv4 (inet_pton):
// "0x7f.1", "127.1" and "2130706433" are not literals here, so they go to the resolver as
// names, whose answer is then checked like any other.
std::optional<IpAddress> ParseIpLiteral(std::string_view text);

// "192.0.2.1", "2001:db8::1" (inet_ntop; IPv6 without brackets).
std::string FormatAddress(const IpAddress& address);

// To and from the socket API's form; `port` in host order.
IpAddress FromSockaddr(const sockaddr* sa);
socklen_t ToSockaddr(const IpAddress& address, uint16_t port, sockaddr_storage* out);

}  // namespace ae::net
