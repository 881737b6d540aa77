#include "sandbox/direct_attempt.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace ae::sandbox {
namespace {

using seccomp::NetworkCall;

// The notification's arguments for connect(3, addr, len), read from this very process.
bool ReadConnect(const void* addr, size_t len, DirectAttempt* out) {
  const uint64_t args[6] = {3, reinterpret_cast<uint64_t>(addr), len, 0, 0, 0};
  return ReadDestination(::getpid(), NetworkCall::kConnect, args, out);
}

TEST(DirectAttempt, ReadsAnIpv4Destination) {
  sockaddr_in in = {};
  in.sin_family = AF_INET;
  in.sin_port = htons(443);
  ASSERT_EQ(inet_pton(AF_INET, "198.51.100.3", &in.sin_addr), 1);
  DirectAttempt d;
  ASSERT_TRUE(ReadConnect(&in, sizeof in, &d));
  EXPECT_EQ(d.family, AF_INET);
  EXPECT_EQ(d.port, 443);
  EXPECT_FALSE(d.loopback);
  EXPECT_EQ(std::memcmp(d.address, &in.sin_addr, 4), 0);
}

TEST(DirectAttempt, LoopbackInEverySpelling) {
  for (const char* text : {"::1", "::", "::ffff:127.0.0.1", "::ffff:127.9.9.9", "::ffff:0.0.0.0"}) {
    sockaddr_in6 in6 = {};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(8080);
    ASSERT_EQ(inet_pton(AF_INET6, text, &in6.sin6_addr), 1) << text;
    DirectAttempt d;
    ASSERT_TRUE(ReadConnect(&in6, sizeof in6, &d)) << text;
    EXPECT_TRUE(d.loopback) << text;
  }
  for (const char* text : {"::2", "::ffff:10.0.0.1", "2001:db8::1", "fe80::1"}) {
    sockaddr_in6 in6 = {};
    in6.sin6_family = AF_INET6;
    ASSERT_EQ(inet_pton(AF_INET6, text, &in6.sin6_addr), 1) << text;
    DirectAttempt d;
    ASSERT_TRUE(ReadConnect(&in6, sizeof in6, &d)) << text;
    EXPECT_FALSE(d.loopback) << text;
  }
  sockaddr_in zero = {};
  zero.sin_family = AF_INET;
  DirectAttempt d;
  ASSERT_TRUE(ReadConnect(&zero, sizeof zero, &d));
  EXPECT_TRUE(d.loopback);
}

TEST(DirectAttempt, NothingToRecordWithoutAnIpAddress) {
  sockaddr_un un = {};
  un.sun_family = AF_UNIX;
  DirectAttempt d;
  EXPECT_FALSE(ReadConnect(&un, sizeof un, &d));
  sockaddr unspec = {};
  unspec.sa_family = AF_UNSPEC;
  EXPECT_FALSE(ReadConnect(&unspec, sizeof unspec, &d));
  sockaddr_in in = {};
  in.sin_family = AF_INET;
  EXPECT_FALSE(ReadConnect(&in, 4, &d));  // shorter than a sockaddr_in
  EXPECT_FALSE(ReadConnect(nullptr, sizeof in, &d));
  // An address the caller cannot have mapped: unreadable, nothing recorded.
  EXPECT_FALSE(ReadConnect(reinterpret_cast<void*>(8), sizeof in, &d));
}

TEST(DirectAttempt, SendtoTakesItsAddressFromTheFifthArgument) {
  sockaddr_in in = {};
  in.sin_family = AF_INET;
  in.sin_port = htons(53);
  in.sin_addr.s_addr = htonl(0x08080808);
  const uint64_t args[6] = {3, 0, 1, 0, reinterpret_cast<uint64_t>(&in), sizeof in};
  DirectAttempt d;
  ASSERT_TRUE(ReadDestination(::getpid(), NetworkCall::kSendto, args, &d));
  EXPECT_EQ(d.call, NetworkCall::kSendto);
  EXPECT_EQ(d.port, 53);
}

constexpr const char* kTcp6 =
    "  sl  local_address                         remote_address                        st tx_queue "
    "rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A "
    "00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n"
    "   1: 00000000000000000000000001000000:0050 00000000000000000000000001000000:C350 01 "
    "00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0\n";

TEST(DirectAttempt, ReadsTheNamespacesListeners) {
  EXPECT_TRUE(TableHasPort(kTcp6, 8080, "0A"));
  EXPECT_FALSE(TableHasPort(kTcp6, 80, "0A"));  // established, not listening
  EXPECT_TRUE(TableHasPort(kTcp6, 80, "01"));
  EXPECT_FALSE(TableHasPort(kTcp6, 9, "0A"));
  EXPECT_FALSE(TableHasPort("", 8080, "0A"));
  EXPECT_FALSE(TableHasPort("header only\n", 8080, "0A"));
  EXPECT_FALSE(TableHasPort("h\n 0: garbage\n 1: 0100007F:zz 0 0A\n", 8080, "0A"));
}

TEST(DirectAttempt, ALoopbackPortIsServedWhenThisProcessListensOnIt) {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_in in = {};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&in), sizeof in), 0);
  ASSERT_EQ(::listen(s, 1), 0);
  socklen_t len = sizeof in;
  ASSERT_EQ(::getsockname(s, reinterpret_cast<sockaddr*>(&in), &len), 0);
  DirectAttempt d;
  ASSERT_TRUE(ReadConnect(&in, sizeof in, &d));
  std::string scratch;
  EXPECT_TRUE(ServedInside(::getpid(), d, 1, &scratch));
  EXPECT_TRUE(ServedInside(::getpid(), d, d.port, &scratch));  // the proxy's port
  ::close(s);
  EXPECT_FALSE(ServedInside(::getpid(), d, 1, &scratch));
}

}  // namespace
}  // namespace ae::sandbox
