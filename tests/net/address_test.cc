// Which addresses the proxy refuses by value: every range's edges, every IPv6 spelling of an
// IPv4 address, and which texts count as IP literals at all.
#include "net/address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>
#include <string>

namespace ae::net {
namespace {

struct ClassCase {
  const char* ip;
  const char* cls;
};

// The class's name, so a failure shows both the address and the words the model would read.
std::string ClassOf(std::string_view text) {
  std::optional<IpAddress> ip = ParseIpLiteral(text);
  if (!ip) return "not a literal";
  return std::string(AddressClassName(Classify(*ip)));
}

IpAddress Ip(const char* text) {
  std::optional<IpAddress> ip = ParseIpLiteral(text);
  EXPECT_TRUE(ip.has_value()) << text;
  return ip.value_or(IpAddress{});
}

TEST(AddressTest, Ipv4RangesAndTheirEdges) {
  const ClassCase cases[] = {
      // 0.0.0.0/8
      {"0.0.0.0", "unspecified"},
      {"0.255.255.255", "unspecified"},
      {"1.0.0.0", "public"},
      // 10.0.0.0/8
      {"9.255.255.255", "public"},
      {"10.0.0.0", "private"},
      {"10.255.255.255", "private"},
      {"11.0.0.0", "public"},
      // 100.64.0.0/10
      {"100.63.255.255", "public"},
      {"100.64.0.0", "CGNAT"},
      {"100.127.255.255", "CGNAT"},
      {"100.128.0.0", "public"},
      // 127.0.0.0/8
      {"126.255.255.255", "public"},
      {"127.0.0.0", "loopback"},
      {"127.0.0.1", "loopback"},
      {"127.255.255.255", "loopback"},
      {"128.0.0.0", "public"},
      // 169.254.0.0/16, with the metadata address inside it
      {"169.253.255.255", "public"},
      {"169.254.0.0", "link-local"},
      {"169.254.169.253", "link-local"},
      {"169.254.169.254", "metadata"},
      {"169.254.169.255", "link-local"},
      {"169.254.255.255", "link-local"},
      {"169.255.0.0", "public"},
      // 172.16.0.0/12
      {"172.15.255.255", "public"},
      {"172.16.0.0", "private"},
      {"172.31.255.255", "private"},
      {"172.32.0.0", "public"},
      // 192.0.0.0/24
      {"191.255.255.255", "public"},
      {"192.0.0.0", "reserved"},
      {"192.0.0.255", "reserved"},
      {"192.0.1.0", "public"},
      {"192.0.2.1", "public"},  // documentation, but nothing to protect there
      // 192.168.0.0/16
      {"192.167.255.255", "public"},
      {"192.168.0.0", "private"},
      {"192.168.255.255", "private"},
      {"192.169.0.0", "public"},
      // 198.18.0.0/15
      {"198.17.255.255", "public"},
      {"198.18.0.0", "reserved"},
      {"198.19.255.255", "reserved"},
      {"198.20.0.0", "public"},
      // 224.0.0.0/4
      {"223.255.255.255", "public"},
      {"224.0.0.0", "multicast"},
      {"239.255.255.255", "multicast"},
      // 240.0.0.0/4 and the broadcast address
      {"240.0.0.0", "reserved"},
      {"255.255.255.254", "reserved"},
      {"255.255.255.255", "reserved"},
      // public
      {"8.8.8.8", "public"},
      {"1.1.1.1", "public"},
      {"203.0.113.5", "public"},
  };
  for (const ClassCase& c : cases) EXPECT_EQ(ClassOf(c.ip), c.cls) << c.ip;
}

TEST(AddressTest, Ipv6RangesAndTheirEdges) {
  const ClassCase cases[] = {
      {"::", "unspecified"},
      {"::1", "loopback"},
      // fc00::/7
      {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"},
      {"fc00::", "private"},
      {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"},
      {"fe00::", "public"},
      // fd00:ec2::254 wins over fc00::/7; its neighbours do not
      {"fd00:ec2::254", "metadata"},
      {"fd00:ec2::253", "private"},
      {"fd00:ec2::255", "private"},
      {"fd00:ec3::254", "private"},
      {"fd00:ec2:0:0:1::254", "private"},
      // fe80::/10
      {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"},
      {"fe80::", "link-local"},
      {"fe80::1", "link-local"},
      {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
      // fec0::/10
      {"fec0::", "reserved"},
      {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
      // ff00::/8
      {"ff00::", "multicast"},
      {"ff02::1", "multicast"},
      {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
      // public
      {"2001:db8::1", "public"},
      {"2606:4700::1111", "public"},
      {"2001:4860:4860::8888", "public"},
      {"2000::", "public"},
      {"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"},
  };
  for (const ClassCase& c : cases) EXPECT_EQ(ClassOf(c.ip), c.cls) << c.ip;
}

TEST(AddressTest, EveryIpv6SpellingOfAnIpv4AddressIsThatAddress) {
  const ClassCase cases[] = {
      // 127.0.0.1 = 7f00:0001; Teredo's client is inverted: 80ff:fffe
      {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:7f00:1", "loopback"},
      {"::127.0.0.1", "loopback"},
      {"64:ff9b::127.0.0.1", "loopback"},
      {"64:ff9b:1::127.0.0.1", "loopback"},
      {"2002:7f00:1::1", "loopback"},
      {"2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"},
      // 10.0.0.1 = 0a00:0001, inverted f5ff:fffe
      {"::ffff:10.0.0.1", "private"},
      {"::10.0.0.1", "private"},
      {"64:ff9b::10.0.0.1", "private"},
      {"64:ff9b:1::10.0.0.1", "private"},
      {"2002:a00:1::1", "private"},
      {"2001:0:4136:e378:8000:63bf:f5ff:fffe", "private"},
      // 169.254.169.254 = a9fe:a9fe, inverted 5601:5601
      {"::ffff:169.254.169.254", "metadata"},
      {"::169.254.169.254", "metadata"},
      {"64:ff9b::169.254.169.254", "metadata"},
      {"64:ff9b:1::a9fe:a9fe", "metadata"},
      {"2002:a9fe:a9fe::1", "metadata"},
      {"2001:0:4136:e378:8000:63bf:5601:5601", "metadata"},
      // 8.8.8.8 = 0808:0808, inverted f7f7:f7f7
      {"::ffff:8.8.8.8", "public"},
      {"::8.8.8.8", "public"},
      {"64:ff9b::8.8.8.8", "public"},
      {"64:ff9b:1::808:808", "public"},
      {"2002:808:808::1", "public"},
      {"2001:0:4136:e378:8000:63bf:f7f7:f7f7", "public"},
  };
  for (const ClassCase& c : cases) EXPECT_EQ(ClassOf(c.ip), c.cls) << c.ip;
}

TEST(AddressTest, EmbeddedIpv4PrefixesAndTheirEdges) {
  const ClassCase cases[] = {
      // ::/96 (IPv4-compatible), but :: and ::1 are IPv6's own
      {"::2", "unspecified"},  // 0.0.0.2
      {"::0.1.0.0", "unspecified"},
      {"::1:0:0:0", "public"},  // outside ::/96
      // ::ffff:0:0/96 (IPv4-mapped)
      {"::ffff:0.0.0.0", "unspecified"},
      {"::ffff:255.255.255.255", "reserved"},
      {"::fffe:7f00:1", "public"},
      {"::1:ffff:7f00:1", "public"},
      // 64:ff9b::/96 (NAT64)
      {"64:ff9a:ffff:ffff:ffff:ffff:7f00:1", "public"},
      {"64:ff9b::", "unspecified"},  // 0.0.0.0
      {"64:ff9b::ffff:ffff", "reserved"},
      {"64:ff9b::1:7f00:1", "public"},  // outside the /96, not the /48
      {"64:ff9b:0:1::7f00:1", "public"},
      // 64:ff9b:1::/48 (local-use NAT64)
      {"64:ff9b:1:ffff:ffff:ffff:7f00:1", "loopback"},
      {"64:ff9b:2::7f00:1", "public"},
      {"64:ff9c::7f00:1", "public"},
      // 2002::/16 (6to4)
      {"2002::", "unspecified"},  // 0.0.0.0
      {"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
      {"2001:ffff:7f00:1::", "public"},
      {"2003:7f00:1::", "public"},
      // 2001::/32 (Teredo)
      {"2001::", "reserved"},  // client 255.255.255.255
      {"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "unspecified"},
      {"2001:1::80ff:fffe", "public"},
      {"2000:ffff:ffff:ffff:ffff:ffff:80ff:fffe", "public"},
  };
  for (const ClassCase& c : cases) EXPECT_EQ(ClassOf(c.ip), c.cls) << c.ip;
}

TEST(AddressTest, ClassNames) {
  const struct {
    AddressClass c;
    const char* name;
  } cases[] = {
      {AddressClass::kPublic, "public"},        {AddressClass::kUnspecified, "unspecified"},
      {AddressClass::kLoopback, "loopback"},    {AddressClass::kPrivate, "private"},
      {AddressClass::kLinkLocal, "link-local"}, {AddressClass::kMetadata, "metadata"},
      {AddressClass::kCgnat, "CGNAT"},          {AddressClass::kMulticast, "multicast"},
      {AddressClass::kReserved, "reserved"},    {AddressClass::kThisHost, "this host"},
  };
  for (const auto& c : cases) EXPECT_EQ(AddressClassName(c.c), c.name);
}

TEST(AddressTest, AnAddressWithoutAFamilyIsNotDialled) {
  IpAddress none;
  none.bytes[0] = 8;
  EXPECT_EQ(Classify(none), AddressClass::kUnspecified);
  EXPECT_EQ(FormatAddress(none), "");
  sockaddr_storage ss{};
  EXPECT_EQ(ToSockaddr(none, 443, &ss), 0u);
}

TEST(AddressTest, OnlyCanonicalLiteralsAreLiterals) {
  for (const char* text : {"127.1",
                           "0x7f.0.0.1",
                           "2130706433",
                           "017.0.0.1",
                           "0177.0.0.1",
                           "127.0.0.01",
                           "",
                           " 1.2.3.4",
                           "1.2.3.4 ",
                           "\t1.2.3.4",
                           " ::1",
                           "::1 ",
                           "fe80::1%eth0",
                           "[fe80::1%eth0]",
                           "fe80::1%25eth0",
                           "fe80::1%1",
                           "[::1",
                           "::1]",
                           "[]",
                           "[[::1]]",
                           "[1.2.3.4]",
                           "1.2.3.4.5",
                           "256.0.0.1",
                           "1.2.3",
                           "1.2.3.",
                           "example.com",
                           "::ffff:017.0.0.1",
                           "1:2:3:4:5:6:7:8:9",
                           "1::2::3",
                           ":::1",
                           "12345::1",
                           "::g"}) {
    EXPECT_FALSE(ParseIpLiteral(text).has_value()) << '"' << text << '"';
  }
  // A NUL inside the text is not where inet_pton's copy may stop.
  EXPECT_FALSE(ParseIpLiteral(std::string_view("1.2.3.4\0.evil", 13)).has_value());
  EXPECT_FALSE(ParseIpLiteral(std::string_view("::1\0", 4)).has_value());
  // Longer than any address's text (and than the buffer inet_pton reads from).
  EXPECT_FALSE(ParseIpLiteral(std::string(100, '1')).has_value());
  EXPECT_FALSE(ParseIpLiteral("[" + std::string(100, ':') + "]").has_value());
}

TEST(AddressTest, LiteralsParseToTheirBytes) {
  const IpAddress v4 = Ip("192.0.2.7");
  EXPECT_EQ(v4.family, AF_INET);
  EXPECT_EQ(v4.bytes[0], 192);
  EXPECT_EQ(v4.bytes[1], 0);
  EXPECT_EQ(v4.bytes[2], 2);
  EXPECT_EQ(v4.bytes[3], 7);

  const IpAddress loopback = Ip("::1");
  EXPECT_EQ(loopback.family, AF_INET6);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(loopback.bytes[i], 0) << i;
  EXPECT_EQ(loopback.bytes[15], 1);
  EXPECT_EQ(Ip("[::1]"), loopback);

  // A mapped address stays IPv6: only its class is the IPv4 one's.
  const IpAddress mapped = Ip("::ffff:1.2.3.4");
  EXPECT_EQ(mapped.family, AF_INET6);
  EXPECT_EQ(mapped.bytes[10], 0xff);
  EXPECT_EQ(mapped.bytes[11], 0xff);
  EXPECT_EQ(mapped.bytes[12], 1);
  EXPECT_EQ(mapped.bytes[15], 4);
  EXPECT_FALSE(mapped == Ip("1.2.3.4"));

  // The longest IPv6 text there is.
  EXPECT_EQ(Ip("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"),
            Ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
  EXPECT_EQ(Ip("2001:DB8::A"), Ip("2001:db8::a"));
  EXPECT_EQ(Ip("0.0.0.0").family, AF_INET);
  EXPECT_EQ(Ip("255.255.255.255").family, AF_INET);
}

TEST(AddressTest, EqualityIsFamilyAndTheFamilysBytes) {
  IpAddress a = Ip("192.0.2.1");
  IpAddress b = a;
  b.bytes[4] = 0xaa;  // past an IPv4 address's four bytes
  b.bytes[15] = 0xbb;
  EXPECT_TRUE(a == b);
  b.bytes[3] = 2;
  EXPECT_FALSE(a == b);

  IpAddress c = Ip("2001:db8::1");
  IpAddress d = c;
  EXPECT_TRUE(c == d);
  d.bytes[15] = 2;
  EXPECT_FALSE(c == d);

  IpAddress v4zero = Ip("0.0.0.0");
  IpAddress v6zero = Ip("::");
  EXPECT_FALSE(v4zero == v6zero);
}

TEST(AddressTest, FormattingRoundTrips) {
  const struct {
    const char* in;
    const char* out;
  } cases[] = {
      {"192.0.2.1", "192.0.2.1"},
      {"0.0.0.0", "0.0.0.0"},
      {"255.255.255.255", "255.255.255.255"},
      {"::", "::"},
      {"0:0:0:0:0:0:0:0", "::"},
      {"::1", "::1"},
      {"[::1]", "::1"},
      {"[2001:db8:0:0::1]", "2001:db8::1"},
      {"2001:DB8:0:0:0:0:0:1", "2001:db8::1"},
      {"2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"},
      {"fe80:0::1", "fe80::1"},
      {"::ffff:7f00:1", "::ffff:127.0.0.1"},
      {"fd00:ec2::254", "fd00:ec2::254"},
      {"64:ff9b::127.0.0.1", "64:ff9b::7f00:1"},
      {"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
  };
  for (const auto& c : cases) {
    const IpAddress ip = Ip(c.in);
    const std::string text = FormatAddress(ip);
    EXPECT_EQ(text, c.out) << c.in;
    std::optional<IpAddress> again = ParseIpLiteral(text);
    ASSERT_TRUE(again.has_value()) << text;
    EXPECT_EQ(*again, ip) << c.in;
  }
}

TEST(AddressTest, SockaddrIpv4) {
  sockaddr_storage ss;
  std::memset(&ss, 0xa5, sizeof ss);  // every byte the call does not set must come out zero
  ASSERT_EQ(ToSockaddr(Ip("192.0.2.1"), 443, &ss), sizeof(sockaddr_in));
  const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
  EXPECT_EQ(in->sin_family, AF_INET);
  EXPECT_EQ(ntohs(in->sin_port), 443);
  EXPECT_EQ(ntohl(in->sin_addr.s_addr), 0xc0000201u);
  for (unsigned char z : in->sin_zero) EXPECT_EQ(z, 0);
  EXPECT_EQ(FromSockaddr(reinterpret_cast<const sockaddr*>(&ss)), Ip("192.0.2.1"));
  EXPECT_EQ(FormatAddress(FromSockaddr(reinterpret_cast<const sockaddr*>(&ss))), "192.0.2.1");
}

TEST(AddressTest, SockaddrIpv6) {
  sockaddr_storage ss;
  std::memset(&ss, 0xa5, sizeof ss);
  ASSERT_EQ(ToSockaddr(Ip("2001:db8::1"), 8443, &ss), sizeof(sockaddr_in6));
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
  EXPECT_EQ(in6->sin6_family, AF_INET6);
  EXPECT_EQ(ntohs(in6->sin6_port), 8443);
  EXPECT_EQ(in6->sin6_flowinfo, 0u);
  EXPECT_EQ(in6->sin6_scope_id, 0u);
  const IpAddress want = Ip("2001:db8::1");
  EXPECT_EQ(std::memcmp(&in6->sin6_addr, want.bytes, 16), 0);
  EXPECT_EQ(FromSockaddr(reinterpret_cast<const sockaddr*>(&ss)), want);
  EXPECT_EQ(FormatAddress(FromSockaddr(reinterpret_cast<const sockaddr*>(&ss))), "2001:db8::1");
}

TEST(AddressTest, SockaddrOfAnotherFamilyHasNoAddress) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  EXPECT_EQ(FromSockaddr(reinterpret_cast<const sockaddr*>(&un)).family, 0);
}

TEST(AddressTest, ThisHostsOwnAddressesInAnySpelling) {
  std::unique_ptr<LocalAddresses> local =
      FixedLocalAddresses({Ip("203.0.113.5"), Ip("2001:db8::5"), Ip("10.0.0.1")});
  const struct {
    const char* ip;
    AddressClass want;
  } cases[] = {
      {"203.0.113.5", AddressClass::kThisHost},
      {"::ffff:203.0.113.5", AddressClass::kThisHost},
      {"::203.0.113.5", AddressClass::kThisHost},
      {"64:ff9b::203.0.113.5", AddressClass::kThisHost},
      {"64:ff9b:1::cb00:7105", AddressClass::kThisHost},
      {"2002:cb00:7105::1", AddressClass::kThisHost},
      {"2001:0:4136:e378:8000:63bf:34ff:8efa", AddressClass::kThisHost},  // Teredo
      {"2001:db8::5", AddressClass::kThisHost},
      {"203.0.113.6", AddressClass::kPublic},
      {"::ffff:203.0.113.6", AddressClass::kPublic},
      {"2001:db8::6", AddressClass::kPublic},
      // The value's class wins over this host's.
      {"10.0.0.1", AddressClass::kPrivate},
      {"::ffff:10.0.0.1", AddressClass::kPrivate},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(AddressClassName(Classify(Ip(c.ip), *local)), AddressClassName(c.want)) << c.ip;
  }
  EXPECT_TRUE(local->Contains(Ip("203.0.113.5")));
  EXPECT_TRUE(local->Contains(Ip("::ffff:203.0.113.5")));
  EXPECT_TRUE(local->Contains(Ip("10.0.0.1")));
  EXPECT_FALSE(local->Contains(Ip("203.0.113.6")));

  std::unique_ptr<LocalAddresses> none = FixedLocalAddresses({});
  EXPECT_FALSE(none->Contains(Ip("203.0.113.5")));
  EXPECT_EQ(Classify(Ip("203.0.113.5"), *none), AddressClass::kPublic);
}

// A LocalAddresses that knows nothing of embedded forms: Classify asks it for them itself.
class ExactAddresses : public LocalAddresses {
 public:
  explicit ExactAddresses(IpAddress only) : only_(only) {}
  bool Contains(const IpAddress& address) const override { return address == only_; }

 private:
  IpAddress only_;
};

TEST(AddressTest, ClassifyChecksTheEmbeddedIpv4ItselfAgainstAnyLocalAddresses) {
  const ExactAddresses local(Ip("203.0.113.5"));
  EXPECT_EQ(Classify(Ip("::ffff:203.0.113.5"), local), AddressClass::kThisHost);
  EXPECT_EQ(Classify(Ip("2002:cb00:7105::1"), local), AddressClass::kThisHost);
  EXPECT_EQ(Classify(Ip("2001:db8::5"), local), AddressClass::kPublic);
}

TEST(AddressTest, SystemLocalAddressesHaveLoopbackYetItIsSaidAsLoopback) {
  std::string error = "stale";
  std::unique_ptr<LocalAddresses> system = SystemLocalAddresses(&error);
  ASSERT_NE(system, nullptr);
  EXPECT_EQ(error, "");
  EXPECT_TRUE(system->Contains(Ip("127.0.0.1")));
  EXPECT_TRUE(system->Contains(Ip("::ffff:127.0.0.1")));
  EXPECT_EQ(Classify(Ip("127.0.0.1"), *system), AddressClass::kLoopback);
  EXPECT_EQ(Classify(Ip("::ffff:127.0.0.1"), *system), AddressClass::kLoopback);
}

}  // namespace
}  // namespace ae::net
