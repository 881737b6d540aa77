#include "engine/exec/direct_record.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

namespace ae {
namespace {

using sandbox::DirectAttempt;
using sandbox::seccomp::NetworkCall;

DirectAttempt Attempt(NetworkCall call, const char* ip, uint16_t port) {
  DirectAttempt d;
  d.call = call;
  d.family = std::string_view(ip).find(':') != std::string_view::npos ? AF_INET6 : AF_INET;
  EXPECT_EQ(inet_pton(d.family, ip, d.address), 1);
  d.port = port;
  return d;
}

constexpr const char* kHow =
    "commands reach the network only through the proxy at 127.0.0.1:3128 (HTTP_PROXY, "
    "HTTPS_PROXY, ALL_PROXY), and only the hosts of network.allow";

TEST(DirectRecord, AConnectPastTheProxy) {
  net::ConnectionRecord r = DirectRecord(Attempt(NetworkCall::kConnect, "198.51.100.3", 443), 3128);
  EXPECT_EQ(r.protocol, "direct");
  EXPECT_EQ(r.host, "198.51.100.3");
  EXPECT_EQ(r.port, 443);
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.address, "");
  EXPECT_EQ(r.reason, "a direct connection past the proxy: the sandbox's network has nothing else");
  EXPECT_EQ(r.hint, std::string("agentexec: network: 198.51.100.3:443 refused (a direct connection "
                                "past the proxy: the sandbox's network has nothing else); ") +
                        kHow);
}

TEST(DirectRecord, DatagramsAndDns) {
  net::ConnectionRecord udp = DirectRecord(Attempt(NetworkCall::kSendto, "2001:db8::1", 9), 3128);
  EXPECT_EQ(udp.protocol, "datagram");
  EXPECT_EQ(udp.reason, "a datagram past the proxy: UDP and raw sockets get nothing");
  EXPECT_EQ(udp.hint.substr(0, 42), "agentexec: network: [2001:db8::1]:9 refuse");
  // Port 53 is DNS whichever call made it, to the local stub resolver too.
  for (NetworkCall call : {NetworkCall::kSendto, NetworkCall::kConnect}) {
    DirectAttempt stub = Attempt(call, "127.0.0.53", 53);
    stub.loopback = true;
    net::ConnectionRecord dns = DirectRecord(stub, 3128);
    EXPECT_EQ(dns.protocol, "dns");
    EXPECT_EQ(dns.reason,
              "a DNS query past the proxy: the sandbox resolves no names, the proxy does");
  }
}

TEST(DirectRecord, NothingListensOnTheSandboxsLoopback) {
  DirectAttempt d = Attempt(NetworkCall::kConnect, "::1", 8080);
  d.loopback = true;
  net::ConnectionRecord r = DirectRecord(d, 3128);
  EXPECT_EQ(r.reason,
            "nothing listens on [::1]:8080 in the sandbox's own network (the host's loopback is "
            "not reachable from it)");
  EXPECT_EQ(r.hint,
            "agentexec: network: [::1]:8080 refused (nothing listens on [::1]:8080 in the "
            "sandbox's own network (the host's loopback is not reachable from it)); start the "
            "service inside the command, or reach an allowed host through the proxy");
}

TEST(DirectRecord, ARawSocketHasNoHost) {
  DirectAttempt d;
  d.call = NetworkCall::kRawSocket;
  d.family = AF_INET;
  net::ConnectionRecord r = DirectRecord(d, 3128);
  EXPECT_EQ(r.protocol, "raw");
  EXPECT_EQ(r.host, "");
  EXPECT_EQ(r.port, 0);
  EXPECT_EQ(r.hint, std::string("agentexec: network: a raw socket refused; ") + kHow);
}

}  // namespace
}  // namespace ae
