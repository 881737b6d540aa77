// The SOCKS5 side (RFC 1928, no authentication): a CONNECT by name, IPv4 or IPv6 in one piece,
// byte by byte or split anywhere, the tunnel's early bytes left unread; every refusal with its
// reply bytes.
#include "net/socks5.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>

namespace ae::net {
namespace {

using namespace std::string_literals;
using State = Socks5Reader::State;

const std::string kGreeting = "\x05\x01\x00"s;
const std::string kChosen = "\x05\x00"s;  // no authentication
// A refusal's reply: VER REP RSV, then 0.0.0.0:0.
std::string Refusal(uint8_t code) {
  return "\x05"s + static_cast<char>(code) + "\x00\x01\x00\x00\x00\x00\x00\x00"s;
}

std::string Port(uint16_t port) {
  return {static_cast<char>(port >> 8), static_cast<char>(port & 0xff)};
}
std::string Request(uint8_t command, const std::string& atyp_and_address, uint16_t port) {
  return "\x05"s + static_cast<char>(command) + '\0' + atyp_and_address + Port(port);
}
std::string Name(const std::string& name) {
  return "\x03"s + static_cast<char>(name.size()) + name;
}
std::string Ipv4(const char* text) {
  in_addr a;
  EXPECT_EQ(::inet_pton(AF_INET, text, &a), 1);
  return "\x01"s + std::string(reinterpret_cast<const char*>(&a), 4);
}
std::string Ipv6(const char* text) {
  in6_addr a;
  EXPECT_EQ(::inet_pton(AF_INET6, text, &a), 1);
  return "\x04"s + std::string(reinterpret_cast<const char*>(&a), 16);
}

struct Fed {
  size_t used = 0;
  std::string replies;  // every reply, in order
};
// Feeds `in` as the proxy does, `in` split at `at` (npos: byte by byte).
Fed FeedSplit(Socks5Reader& r, const std::string& in, size_t at) {
  Fed fed;
  std::string reply;
  auto feed = [&](const char* data, size_t n) {
    if (r.state() != State::kNeedMore) return;
    const size_t got = r.Feed(data, n, &reply);
    EXPECT_LE(got, n);
    fed.used += got;
    fed.replies += reply;
  };
  if (at == std::string::npos) {
    for (char c : in) feed(&c, 1);
  } else {
    feed(in.data(), at);
    feed(in.data() + at, in.size() - at);
  }
  return fed;
}

// A long name in labels of the longest a DNS label may be (63).
std::string LongName() {
  std::string name;
  for (int i = 0; i < 3; ++i) name += std::string(63, static_cast<char>('a' + i)) + ".";
  return name + "test";
}

TEST(Socks5Test, ConnectRequestsWholeByteByByteAndSplitAnywhere) {
  struct Case {
    std::string request;
    std::string host;
    bool is_name;
    uint16_t port;
  } cases[] = {
      {Request(1, Name("Example.COM."), 22), "example.com", true, 22},
      {Request(1, Name("my_host-1.a.test"), 443), "my_host-1.a.test", true, 443},
      {Request(1, Name(LongName()), 80), LongName(), true, 80},
      {Request(1, Ipv4("192.0.2.7"), 443), "192.0.2.7", false, 443},
      {Request(1, Ipv6("2001:db8::1"), 65535), "2001:db8::1", false, 65535},
      {Request(1, Ipv6("::ffff:127.0.0.1"), 1), "::ffff:127.0.0.1", false, 1},
      // socks5h:// sends a literal as text: still a literal, which the proxy classifies.
      {Request(1, Name("10.0.0.1"), 443), "10.0.0.1", false, 443},
      {Request(1, Name("127.0.0.1."), 443), "127.0.0.1", false, 443},
      {Request(1, Name("2001:DB8:0::1"), 443), "2001:db8::1", false, 443},
  };
  const std::string tunnel = "SSH-2.0-OpenSSH_9.2\r\n";
  for (const Case& c : cases) {
    const std::string& host = c.host;
    const std::string in = kGreeting + c.request;
    for (size_t at = 0; at <= in.size() + 1; ++at) {
      const size_t split = at == in.size() + 1 ? std::string::npos : at;
      SCOPED_TRACE(host + " split at " + std::to_string(at));
      Socks5Reader r;
      const Fed fed = FeedSplit(r, in + tunnel, split);
      EXPECT_EQ(fed.used, in.size());  // the tunnel's first bytes are left unread
      EXPECT_EQ(r.state(), State::kRequest);
      EXPECT_EQ(fed.replies, kChosen);
      EXPECT_EQ(r.error(), "");
      if (r.state() != State::kRequest) break;
      EXPECT_EQ(r.request().host, host);
      EXPECT_EQ(r.request().host_is_name, c.is_name);
      EXPECT_EQ(r.request().port, c.port);
      std::string reply = "x";
      EXPECT_EQ(r.Feed(tunnel.data(), tunnel.size(), &reply), 0u);
      EXPECT_EQ(reply, "");
    }
  }
}

TEST(Socks5Test, TheGreetingIsAnsweredBeforeTheRequestComes) {
  Socks5Reader r;
  std::string reply;
  const std::string greeting = "\x05\x03\x02\x01\x00"s;  // user/password, GSSAPI, none
  EXPECT_EQ(r.Feed(greeting.data(), greeting.size(), &reply), greeting.size());
  EXPECT_EQ(r.state(), State::kNeedMore);
  EXPECT_EQ(reply, kChosen);
  const std::string request = Request(1, Name("a.test"), 80);
  EXPECT_EQ(r.Feed(request.data(), 3, &reply), 3u);
  EXPECT_EQ(reply, "");  // nothing is due until the request is whole
  EXPECT_EQ(r.Feed(request.data() + 3, request.size() - 3, &reply), request.size() - 3);
  EXPECT_EQ(reply, "");  // the CONNECT's reply is the proxy's, once it has dialled
  EXPECT_EQ(r.state(), State::kRequest);
  EXPECT_EQ(r.request().host, "a.test");
  EXPECT_EQ(r.Feed(nullptr, 0, &reply), 0u);
}

TEST(Socks5Test, AnEmptyFeedChangesNothing) {
  Socks5Reader r;
  std::string reply;
  EXPECT_EQ(r.Feed(nullptr, 0, &reply), 0u);
  EXPECT_EQ(r.state(), State::kNeedMore);
  EXPECT_EQ(r.Feed(kGreeting.data(), kGreeting.size(), &reply), kGreeting.size());
  EXPECT_EQ(r.Feed(nullptr, 0, &reply), 0u);
  EXPECT_EQ(r.state(), State::kNeedMore);
  EXPECT_EQ(reply, "");
}

TEST(Socks5Test, RefusalsSayWhyAndAnswerAsTheProtocolSays) {
  struct Case {
    std::string in;
    std::string error;
    std::string reply;  // what the client is sent, the method selection included
    size_t used;        // bytes consumed up to the refusal
  } cases[] = {
      {"\x05\x01\x02"s, "no acceptable authentication method", "\x05\xff"s, 3},
      {"\x05\x02\x01\x02"s, "no acceptable authentication method", "\x05\xff"s, 4},
      {"\x05\x00"s, "no acceptable authentication method", "\x05\xff"s, 2},
      // SOCKS4 and HTTP get no SOCKS5 reply.
      {"\x04\x01\x00\x50\x7f\x00\x00\x01\x00"s, "not a SOCKS5 client", "", 1},
      {"GET / HTTP/1.1\r\n\r\n", "not a SOCKS5 client", "", 1},
      {kGreeting + "\x04\x01\x00\x01"s, "not a SOCKS5 client", kChosen, 4},
      {kGreeting + Request(2, Ipv4("0.0.0.0"), 80), "BIND is not supported", kChosen + Refusal(7),
       13},
      {kGreeting + Request(3, Ipv4("0.0.0.0"), 53), "UDP ASSOCIATE is not supported",
       kChosen + Refusal(7), 13},
      {kGreeting + Request(9, Name("a.test"), 53), "command 9 is not supported",
       kChosen + Refusal(7), 3 + 13},
      {kGreeting + "\x05\x01\x00\x09\x00\x00"s, "address type 9 is not supported",
       kChosen + Refusal(8), 7},
      {kGreeting + "\x05\x01\x00\x00"s, "address type 0 is not supported", kChosen + Refusal(8), 7},
      {kGreeting + Request(1, Name("example.com"), 0), "the port is 0", kChosen + Refusal(1),
       3 + 18},
      {kGreeting + Request(1, Ipv4("192.0.2.1"), 0), "the port is 0", kChosen + Refusal(1), 13},
      {kGreeting + Request(1, Name(""), 80), "the host name is empty", kChosen + Refusal(1), 8},
      {kGreeting + Request(1, Name("a b"), 443), "the host is not a name", kChosen + Refusal(1),
       3 + 10},
      {kGreeting + Request(1, Name("a..b"), 443), "the host is not a name", kChosen + Refusal(1),
       3 + 11},
      {kGreeting + Request(1, Name("."), 443), "the host is not a name", kChosen + Refusal(1),
       3 + 8},
      {kGreeting + Request(1, Name("[::1]"), 443), "the host is not a name", kChosen + Refusal(1),
       3 + 12},
      {kGreeting + Request(1, Name("a.test\\@b"), 443), "the host is not a name",
       kChosen + Refusal(1), 3 + 16},
      {kGreeting + Request(1, Name("127.0.0.1\0.evil.test"s), 443), "the host is not a name",
       kChosen + Refusal(1), 3 + 27},
  };
  const std::string after = "more bytes";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    for (size_t split : {size_t{0}, std::string::npos}) {
      Socks5Reader r;
      const Fed fed = FeedSplit(r, c.in + after, split);
      EXPECT_EQ(r.state(), State::kFailed);
      EXPECT_EQ(r.error(), c.error);
      EXPECT_EQ(fed.replies, c.reply);
      EXPECT_EQ(fed.used, c.used);
      std::string reply = "x";
      EXPECT_EQ(r.Feed(c.in.data(), c.in.size(), &reply), 0u);
      EXPECT_EQ(reply, "");
    }
  }
}

TEST(Socks5Test, ReplyBytes) {
  EXPECT_EQ(Socks5Reader::Reply(Socks5Reply::kSucceeded),
            "\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00"s);
  EXPECT_EQ(Socks5Reader::Reply(Socks5Reply::kNotAllowed), Refusal(2));
  EXPECT_EQ(Socks5Reader::Reply(Socks5Reply::kHostUnreachable, nullptr, 1080),
            "\x05\x04\x00\x01\x00\x00\x00\x00\x04\x38"s);

  IpAddress v4;
  v4.family = AF_INET;
  ASSERT_EQ(::inet_pton(AF_INET, "192.0.2.1", v4.bytes), 1);
  EXPECT_EQ(Socks5Reader::Reply(Socks5Reply::kSucceeded, &v4, 8080),
            "\x05\x00\x00\x01\xc0\x00\x02\x01\x1f\x90"s);

  IpAddress v6;
  v6.family = AF_INET6;
  ASSERT_EQ(::inet_pton(AF_INET6, "2001:db8::2", v6.bytes), 1);
  EXPECT_EQ(Socks5Reader::Reply(Socks5Reply::kConnectionRefused, &v6, 443),
            "\x05\x05\x00\x04\x20\x01\x0d\xb8"s + std::string(11, '\0') + "\x02\x01\xbb"s);

  const IpAddress none;  // no family: as if none was given
  EXPECT_EQ(Socks5Reader::Reply(Socks5Reply::kGeneralFailure, &none, 0), Refusal(1));
}

}  // namespace
}  // namespace ae::net
