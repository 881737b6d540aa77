// The egress proxy: agentexec's side of a command's network namespace. The sandbox makes each
// command's namespace with only `lo`, listens on 127.0.0.1:<port> inside it and hands the
// listening socket to agentexec (sandbox/network.h); the session attaches it here, so every
// connection a command opens arrives on that socket and is served on the host's network:
// - HTTP_PROXY requests (plain HTTP, one request per connection, the Host header checked);
// - CONNECT tunnels, which must start with a TLS ClientHello naming the CONNECT host; to a
//   brokered credential's host (net/credentials.h) the tunnel's TLS is terminated with the
//   run's CA and each request's headers rewritten; every other tunnel stays opaque;
// - SOCKS5 CONNECT (ALL_PROXY=socks5h://), names resolved here; BIND and UDP refused.
// The protocol is told by the first byte (SOCKS5 starts with 5). Each name is resolved once,
// every address checked (net/policy.h CheckAddress), and a checked address dialled: no second
// lookup, so no rebinding. Every attempt ends as a ConnectionRecord of the command's lease.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "net/address.h"
#include "net/policy.h"

namespace ae::net {

class Broker;

// One connection attempt, for the JSONL (item type "network_request") and the model.
struct ConnectionRecord {
  std::string protocol;  // "http" (plain, through HTTP_PROXY), "https" (CONNECT), "socks5"
  std::string host;      // as the command named it
  uint16_t port = 0;
  std::string method;   // plain HTTP's method, else ""
  std::string address;  // the address dialled, "" when none was
  bool allowed = false;
  std::string rule;    // the allow rule that let it through, or the deny rule that refused it
  std::string reason;  // why it was refused or failed, "" when it went through
  std::string hint;    // for a refusal: the line the model reads (DenialHint)
  // Brokered credentials (net/credentials.h) whose real value went into the request, by name.
  std::vector<std::string> credentials;
  uint64_t bytes_sent = 0;      // from the command to the host
  uint64_t bytes_received = 0;  // from the host to the command
};

// Name resolution, once per connection. An interface so tests can map names to the addresses
// of servers they start.
class Resolver {
 public:
  virtual ~Resolver() = default;
  // Every address `host` has (A and AAAA), or why there is none.
  virtual Result<std::vector<IpAddress>> Resolve(const std::string& host) = 0;
};
// getaddrinfo(3). The test hook AGENTEXEC_NET_FAKE_HOSTS ("name=ip;name=ip", docs/SANDBOX.md
// "Test hooks") answers from that list instead, and knows no other name.
std::unique_ptr<Resolver> SystemResolver();

class Proxy {
 public:
  // `broker`: the credentials whose hosts' TLS is terminated (null: none; every tunnel opaque).
  Proxy(Policy policy, std::unique_ptr<Resolver> resolver, std::unique_ptr<LocalAddresses> local,
        std::shared_ptr<Broker> broker = nullptr);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  const Policy& policy() const;

  // A command's listening socket and what it connected to. Ending the lease (Finish, or the
  // destructor) closes the listener and every connection still open (the command's tree is
  // gone by then) and returns the records, in the order the attempts were made.
  class Lease {
   public:
    virtual ~Lease() = default;
    virtual std::vector<ConnectionRecord> Finish() = 0;
  };
  std::unique_ptr<Lease> Attach(Fd listener);

  struct Shared;  // the policy, resolver and addresses every connection reads (proxy.cc)

 private:
  std::shared_ptr<Shared> shared_;
};

// The environment a command of a proxied run gets so its tools use the proxy at
// 127.0.0.1:`port` (HTTP_PROXY and friends in both cases, ALL_PROXY for SOCKS5, and what
// npm, pip, yarn, git and the JVM read), as "NAME=value".
std::vector<std::string> ProxyEnvironment(uint16_t port);

}  // namespace ae::net
