#include "net/address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ae::net {
namespace {

IpAddress V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  IpAddress ip;
  ip.family = AF_INET;
  ip.bytes[0] = a;
  ip.bytes[1] = b;
  ip.bytes[2] = c;
  ip.bytes[3] = d;
  return ip;
}

bool AllZero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// The IPv4 address an IPv6 one carries, where a router or the kernel would deliver it to that
// IPv4 address: IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96 but :: and ::1), NAT64
// (64:ff9b::/96, 64:ff9b:1::/48), 6to4 (2002::/16) and Teredo's client (2001::/32, inverted).
std::optional<IpAddress> EmbeddedV4(const IpAddress& ip) {
  if (ip.family != AF_INET6) return std::nullopt;
  const uint8_t* b = ip.bytes;
  if (AllZero(b, 10) && b[10] == 0xff && b[11] == 0xff) return V4(b[12], b[13], b[14], b[15]);
  // ::a.b.c.d, but not :: and ::1 (IPv6's own unspecified and loopback addresses).
  if (AllZero(b, 12) && !(AllZero(b + 12, 3) && b[15] <= 1)) {
    return V4(b[12], b[13], b[14], b[15]);
  }
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) {
    if (AllZero(b + 4, 8)) return V4(b[12], b[13], b[14], b[15]);
    // The local-use /48 read as a /96 in it, the IPv4 address last, as translators configure it.
    if (b[4] == 0x00 && b[5] == 0x01) return V4(b[12], b[13], b[14], b[15]);
  }
  if (b[0] == 0x20 && b[1] == 0x02) return V4(b[2], b[3], b[4], b[5]);
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00) {
    return V4(b[12] ^ 0xff, b[13] ^ 0xff, b[14] ^ 0xff, b[15] ^ 0xff);
  }
  return std::nullopt;
}

AddressClass ClassifyV4(const uint8_t* b) {
  if (b[0] == 0) return AddressClass::kUnspecified;
  if (b[0] == 127) return AddressClass::kLoopback;
  if (b[0] == 10 || (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168)) {
    return AddressClass::kPrivate;
  }
  if (b[0] == 169 && b[1] == 254) {
    return b[2] == 169 && b[3] == 254 ? AddressClass::kMetadata : AddressClass::kLinkLocal;
  }
  if (b[0] == 100 && (b[1] & 0xc0) == 64) return AddressClass::kCgnat;
  if ((b[0] & 0xf0) == 224) return AddressClass::kMulticast;
  if ((b[0] & 0xf0) == 240) return AddressClass::kReserved;  // 255.255.255.255 included
  if (b[0] == 192 && b[1] == 0 && b[2] == 0) return AddressClass::kReserved;
  if (b[0] == 198 && (b[1] & 0xfe) == 18) return AddressClass::kReserved;
  return AddressClass::kPublic;
}

AddressClass ClassifyV6(const uint8_t* b) {
  if (AllZero(b, 16)) return AddressClass::kUnspecified;
  if (AllZero(b, 15) && b[15] == 1) return AddressClass::kLoopback;
  // fd00:ec2::254, inside fc00::/7, is the metadata service's IPv6 address.
  static const uint8_t kMetadata[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
                                        0,    0,    0,    0,    0, 0, 0x02, 0x54};
  if (std::memcmp(b, kMetadata, 16) == 0) return AddressClass::kMetadata;
  if ((b[0] & 0xfe) == 0xfc) return AddressClass::kPrivate;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return AddressClass::kLinkLocal;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return AddressClass::kReserved;
  if (b[0] == 0xff) return AddressClass::kMulticast;
  return AddressClass::kPublic;
}

class ListedAddresses : public LocalAddresses {
 public:
  explicit ListedAddresses(std::vector<IpAddress> addresses) : addresses_(std::move(addresses)) {}
  bool Contains(const IpAddress& address) const override {
    const std::optional<IpAddress> v4 = EmbeddedV4(address);
    for (const IpAddress& have : addresses_) {
      if (have == address || (v4 && have == *v4)) return true;
    }
    return false;
  }

 private:
  std::vector<IpAddress> addresses_;
};

}  // namespace

bool IpAddress::operator==(const IpAddress& other) const {
  if (family != other.family) return false;
  return std::memcmp(bytes, other.bytes, family == AF_INET ? 4 : 16) == 0;
}

std::string_view AddressClassName(AddressClass c) {
  switch (c) {
    case AddressClass::kPublic:
      return "public";
    case AddressClass::kUnspecified:
      return "unspecified";
    case AddressClass::kLoopback:
      return "loopback";
    case AddressClass::kPrivate:
      return "private";
    case AddressClass::kLinkLocal:
      return "link-local";
    case AddressClass::kMetadata:
      return "metadata";
    case AddressClass::kCgnat:
      return "CGNAT";
    case AddressClass::kMulticast:
      return "multicast";
    case AddressClass::kReserved:
      return "reserved";
    case AddressClass::kThisHost:
      return "this host";
  }
  return "public";
}

AddressClass Classify(const IpAddress& address) {
  if (address.family == AF_INET) return ClassifyV4(address.bytes);
  // No family is no address to dial: refused rather than read as IPv6 bytes.
  if (address.family != AF_INET6) return AddressClass::kUnspecified;
  if (std::optional<IpAddress> v4 = EmbeddedV4(address)) return ClassifyV4(v4->bytes);
  return ClassifyV6(address.bytes);
}

AddressClass Classify(const IpAddress& address, const LocalAddresses& local) {
  const AddressClass by_value = Classify(address);
  if (by_value != AddressClass::kPublic) return by_value;
  if (local.Contains(address)) return AddressClass::kThisHost;
  // Asked here too, not only in ListedAddresses: another LocalAddresses may compare exactly.
  if (std::optional<IpAddress> v4 = EmbeddedV4(address); v4 && local.Contains(*v4)) {
    return AddressClass::kThisHost;
  }
  return AddressClass::kPublic;
}

std::unique_ptr<LocalAddresses> SystemLocalAddresses(std::string* error) {
  error->clear();
  std::vector<IpAddress> found;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    *error = std::string("getifaddrs: ") + std::strerror(errno);
    return FixedLocalAddresses({});
  }
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr) continue;
    const int family = ifa->ifa_addr->sa_family;
    if (family == AF_INET || family == AF_INET6) found.push_back(FromSockaddr(ifa->ifa_addr));
  }
  ::freeifaddrs(list);
  return FixedLocalAddresses(std::move(found));
}

std::unique_ptr<LocalAddresses> FixedLocalAddresses(std::vector<IpAddress> addresses) {
  return std::make_unique<ListedAddresses>(std::move(addresses));
}

std::optional<IpAddress> ParseIpLiteral(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
    // Brackets are IPv6's alone in a URL (RFC 3986): "[1.2.3.4]" is no literal.
    if (text.find(':') == std::string_view::npos) return std::nullopt;
  }
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  // A NUL would end the copy inet_pton reads early ("1.2.3.4\0.evil"), and a zone id names an
  // interface, which a dial through this proxy has no business choosing.
  if (text.find_first_of(std::string_view("\0%", 2)) != std::string_view::npos) {
    return std::nullopt;
  }
  char buf[INET6_ADDRSTRLEN];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  IpAddress ip;
  if (::inet_pton(AF_INET, buf, ip.bytes) == 1) {
    ip.family = AF_INET;
    return ip;
  }
  if (::inet_pton(AF_INET6, buf, ip.bytes) == 1) {
    ip.family = AF_INET6;
    return ip;
  }
  return std::nullopt;
}

std::string FormatAddress(const IpAddress& address) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(address.family, address.bytes, buf, sizeof buf) == nullptr) return "";
  return buf;
}

IpAddress FromSockaddr(const sockaddr* sa) {
  IpAddress ip;
  if (sa->sa_family == AF_INET) {
    ip.family = AF_INET;
    std::memcpy(ip.bytes, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    ip.family = AF_INET6;
    std::memcpy(ip.bytes, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
  }
  return ip;
}

socklen_t ToSockaddr(const IpAddress& address, uint16_t port, sockaddr_storage* out) {
  std::memset(out, 0, sizeof *out);
  if (address.family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(out);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, address.bytes, 4);
    return sizeof(sockaddr_in);
  }
  if (address.family != AF_INET6) return 0;  // connect() then fails instead of dialling [::]
  auto* in6 = reinterpret_cast<sockaddr_in6*>(out);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(port);
  std::memcpy(&in6->sin6_addr, address.bytes, 16);
  return sizeof(sockaddr_in6);
}

}  // namespace ae::net
