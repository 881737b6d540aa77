#include "engine/exec/direct_record.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <cstring>

#include "net/address.h"

namespace ae {

net::ConnectionRecord DirectRecord(const sandbox::DirectAttempt& attempt, uint16_t proxy_port) {
  net::ConnectionRecord r;
  r.allowed = false;
  const std::string how = fmt::format(
      "commands reach the network only through the proxy at 127.0.0.1:{} (HTTP_PROXY, "
      "HTTPS_PROXY, ALL_PROXY), and only the hosts of network.allow",
      proxy_port);
  if (attempt.call == sandbox::seccomp::NetworkCall::kRawSocket) {
    r.protocol = "raw";
    r.reason = "a raw socket: the sandbox's network has nothing but the proxy";
    r.hint = fmt::format("agentexec: network: a raw socket refused; {}", how);
    return r;
  }
  net::IpAddress ip;
  ip.family = attempt.family;
  std::memcpy(ip.bytes, attempt.address, sizeof ip.bytes);
  r.host = net::FormatAddress(ip);
  r.port = attempt.port;
  const std::string shown = attempt.family == AF_INET6 ? fmt::format("[{}]:{}", r.host, r.port)
                                                       : fmt::format("{}:{}", r.host, r.port);
  const bool datagram = attempt.call == sandbox::seccomp::NetworkCall::kSendto;
  r.protocol = attempt.port == 53 ? "dns" : datagram ? "datagram" : "direct";
  if (attempt.loopback && r.protocol != "dns") {
    r.reason = fmt::format(
        "nothing listens on {} in the sandbox's own network (the host's loopback is not "
        "reachable from it)",
        shown);
    r.hint = fmt::format(
        "agentexec: network: {} refused ({}); start the service inside the command, or reach "
        "an allowed host through the proxy",
        shown, r.reason);
    return r;
  }
  if (r.protocol == "dns") {
    r.reason = "a DNS query past the proxy: the sandbox resolves no names, the proxy does";
  } else if (datagram) {
    r.reason = "a datagram past the proxy: UDP and raw sockets get nothing";
  } else {
    r.reason = "a direct connection past the proxy: the sandbox's network has nothing else";
  }
  r.hint = fmt::format("agentexec: network: {} refused ({}); {}", shown, r.reason, how);
  return r;
}

}  // namespace ae
