#include "net/proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "net/client_hello.h"
#include "net/credentials.h"
#include "net/host_name.h"
#include "net/http_request.h"
#include "net/response_filter.h"
#include "net/socket_io.h"
#include "net/socks5.h"
#include "net/tls_stream.h"

namespace ae::net {
namespace {

// A command that opens a connection and says nothing holds a thread; it gets this long to
// send a request head or a SOCKS5 request.
constexpr int kRequestTimeoutMs = 30000;
constexpr int kConnectTimeoutMs = 15000;
// Connection threads need little stack: buffers live on the heap.
constexpr size_t kThreadStack = size_t{256} * 1024;
constexpr size_t kRelayChunk = size_t{64} * 1024;  // a pipe's default capacity
constexpr size_t kPipeBytes =
    size_t{1024} * 1024;  // what an unprivileged process may ask by default

class FakeResolver : public Resolver {
 public:
  explicit FakeResolver(const std::string& spec) {
    size_t at = 0;
    while (at < spec.size()) {
      size_t end = spec.find(';', at);
      if (end == std::string::npos) end = spec.size();
      const std::string item = spec.substr(at, end - at);
      at = end + 1;
      const size_t eq = item.find('=');
      if (eq == std::string::npos) continue;
      if (std::optional<IpAddress> ip = ParseIpLiteral(item.substr(eq + 1))) {
        names_.emplace_back(item.substr(0, eq), *ip);
      }
    }
  }
  Result<std::vector<IpAddress>> Resolve(const std::string& host) override {
    std::vector<IpAddress> found;
    for (const auto& [name, ip] : names_) {
      if (name == host) found.push_back(ip);
    }
    if (found.empty()) return MakeError("Name or service not known");
    return found;
  }

 private:
  std::vector<std::pair<std::string, IpAddress>> names_;
};

class GetaddrinfoResolver : public Resolver {
 public:
  Result<std::vector<IpAddress>> Resolve(const std::string& host) override {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list); rc != 0) {
      return MakeError(rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc));
    }
    std::vector<IpAddress> found;
    for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
      if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
      IpAddress ip = FromSockaddr(ai->ai_addr);
      if (std::find(found.begin(), found.end(), ip) == found.end()) found.push_back(ip);
    }
    ::freeaddrinfo(list);
    if (found.empty()) return MakeError("no address");
    return found;
  }
};

// Dials `address`:`port` within kConnectTimeoutMs; the socket (blocking) or -1 with *error.
int Dial(const IpAddress& address, uint16_t port, std::string* error) {
  sockaddr_storage ss{};
  socklen_t len = ToSockaddr(address, port, &ss);
  int fd = ::socket(address.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = std::strerror(errno);
    return -1;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    *error = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!WaitFor(fd, POLLOUT, kConnectTimeoutMs)) {
    *error = "connection timed out";
    ::close(fd);
    return -1;
  }
  int so_error = 0;
  socklen_t so_len = sizeof so_error;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &so_len);
  if (so_error != 0) {
    *error = std::strerror(so_error);
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

std::unique_ptr<Resolver> SystemResolver() {
  if (const char* fake = std::getenv("AGENTEXEC_NET_FAKE_HOSTS")) {
    return std::make_unique<FakeResolver>(fake);
  }
  return std::make_unique<GetaddrinfoResolver>();
}

struct Proxy::Shared {
  Policy policy;
  std::unique_ptr<Resolver> resolver;
  std::unique_ptr<LocalAddresses> local;
  std::shared_ptr<Broker> broker;
};

namespace {

// Moves bytes between two sockets without copying them into this process: splice(2) through a
// pipe per direction, made on first use. Where no pipe can be had (the descriptor limit), a
// heap buffer of the same size, touched only as far as data arrives.
class Pumps {
 public:
  enum Direction { kUp = 0, kDown = 1 };
  Pumps() = default;
  ~Pumps() {
    for (auto& p : pipes_) {
      if (p[0] >= 0) ::close(p[0]);
      if (p[1] >= 0) ::close(p[1]);
    }
  }
  Pumps(const Pumps&) = delete;
  Pumps& operator=(const Pumps&) = delete;
  Pumps(Pumps&&) = delete;
  Pumps& operator=(Pumps&&) = delete;
  static constexpr ssize_t kNothing = -2;
  // What `from` has now, written whole to `to`: the bytes moved, 0 at EOF, kNothing when it
  // had nothing after all, -1 on an error.
  ssize_t Move(int from, int to, Direction d) {
    int* pipe = pipes_[d];
    if (pipe[0] < 0 && !copy_) {
      if (::pipe2(pipe, O_CLOEXEC) != 0) {
        copy_ = true;
      } else {
        // A larger pipe moves a bulk download in fewer calls; where the size is refused
        // (over /proc/sys/fs/pipe-max-size), the default 64 KiB still works.
        const int got = ::fcntl(pipe[0], F_SETPIPE_SZ, static_cast<int>(kPipeBytes));
        capacity_[d] = got > 0 ? static_cast<size_t>(got) : kRelayChunk;
      }
    }
    if (copy_) return Copy(from, to);
    ssize_t in = 0;
    while ((in = ::splice(from, nullptr, pipe[1], nullptr, capacity_[d],
                          SPLICE_F_MOVE | SPLICE_F_NONBLOCK)) < 0 &&
           errno == EINTR) {
    }
    if (in < 0 && errno == EAGAIN) return kNothing;  // woken, but no data yet: not the end
    if (in <= 0) return in;
    for (ssize_t left = in; left > 0;) {
      ssize_t out =
          ::splice(pipe[0], nullptr, to, nullptr, static_cast<size_t>(left), SPLICE_F_MOVE);
      if (out < 0 && errno == EINTR) continue;
      if (out <= 0) return -1;
      left -= out;
    }
    return in;
  }

 private:
  ssize_t Copy(int from, int to) {
    if (!buffer_) buffer_.reset(new char[kRelayChunk]);
    ssize_t n = 0;
    while ((n = ::recv(from, buffer_.get(), kRelayChunk, 0)) < 0 && errno == EINTR) {
    }
    if (n <= 0) return n;
    return SendAll(to, std::string_view(buffer_.get(), static_cast<size_t>(n))) ? n : -1;
  }

  int pipes_[2][2] = {{-1, -1}, {-1, -1}};
  size_t capacity_[2] = {kRelayChunk, kRelayChunk};
  bool copy_ = false;
  std::unique_ptr<char[]> buffer_;
};

// One accepted connection, served on its own thread with blocking calls.
class Connection {
 public:
  Connection(std::shared_ptr<Proxy::Shared> shared, Fd client)
      : shared_(std::move(shared)), client_(std::move(client)) {}

  // Serves the connection to its end, then closes both sockets: a client must see the
  // refusal's EOF at once, not when the command's lease ends.
  void Serve() {
    ServeRequest();
    std::lock_guard<std::mutex> lock(mu_);
    client_.reset();
    upstream_fd_.reset();
  }
  // From the lease's thread: ends a connection still being served (its command is gone).
  void Interrupt() {
    std::lock_guard<std::mutex> lock(mu_);
    if (client_) ::shutdown(client_.get(), SHUT_RDWR);
    if (upstream_fd_) ::shutdown(upstream_fd_.get(), SHUT_RDWR);
  }
  ConnectionRecord TakeRecord() { return std::move(record_); }

 private:
  void ServeHttp(std::string first);
  void ServeSocks(std::string first);
  // Policy, resolution, address checks and the dial: the upstream socket, or false with the
  // record saying why (and record_.hint set for a refusal by the policy).
  bool Open(const std::string& host, uint16_t port);
  void Refuse(std::string reason) {
    record_.allowed = false;
    record_.reason = std::move(reason);
  }
  // Relays both ways until both sides are done. `first_up` is what the client sent that is
  // still to go upstream. With `inspect_tls` the client's first bytes must be a ClientHello
  // naming the host (`tls_required`: nothing else may start the stream).
  void Relay(std::string first_up, bool inspect_tls, bool tls_required);
  bool CheckHello(std::string* pending, bool tls_required, bool* decided);
  // A tunnel to a brokered credential's host: its TLS ended here with the run CA's
  // certificate, one request read, rewritten (net/credentials.h) and sent over TLS of the
  // proxy's own to the host, whose answer comes back filtered.
  void Terminate(std::string first_up);
  // Why a request (or a CONNECT) is refused before anything is dialled: read-only methods, a
  // Host header naming another host; "" when it may go on. `covered`: a credential's host,
  // whose tunnel is terminated.
  std::string RefusedBeforeDial(const HttpRequestHead& head, bool covered) const;
  // The request `reader` has read the head of, from `in` to `out` (ForwardHeaders), its body
  // to its end; false (record_ saying why) when it must not or could not go.
  template <typename Source, typename Sink>
  // `tls`: inside a tunnel the proxy terminated (credentials are put in only there).
  bool ForwardRequest(HttpRequestReader& reader, std::string pending, bool tls, Source& in,
                      Sink& out);
  // The response from `in` to `out` until `in` ends, through `filter`.
  template <typename Source, typename Sink>
  void ForwardResponse(Source& in, Sink& out, ResponseFilter& filter);

  void ServeRequest();

  std::shared_ptr<Proxy::Shared> shared_;
  std::mutex mu_;  // the sockets' lifetime, against Interrupt
  Fd client_;
  Fd upstream_fd_;
  ConnectionRecord record_;
};

bool Connection::Open(const std::string& host, uint16_t port) {
  record_.host = host;
  record_.port = port;
  const Policy& policy = shared_->policy;
  Decision d = Decide(policy, host, port);
  record_.rule = d.rule;
  if (!d.allowed) {
    Refuse(d.reason);
    record_.hint = DenialHint(host, port, d);
    return false;
  }
  std::vector<IpAddress> addresses;
  if (std::optional<IpAddress> literal = ParseIpLiteral(host)) {
    addresses.push_back(*literal);
  } else {
    Result<std::vector<IpAddress>> resolved = shared_->resolver->Resolve(host);
    if (!resolved.ok()) {
      Refuse(fmt::format("cannot resolve {}: {}", host, resolved.message()));
      return false;
    }
    addresses = std::move(*resolved);
  }
  // Every address is checked before any is dialled: a name that also resolves to a private
  // address is refused whole (a resolver that mixes them is an attack or a mistake).
  for (const IpAddress& ip : addresses) {
    std::string why = CheckAddress(policy, ip, Classify(ip, *shared_->local));
    if (!why.empty()) {
      const std::string shown = FormatAddress(ip);
      Refuse(ParseIpLiteral(host) ? fmt::format("{} is {}", shown, why)
                                  : fmt::format("{} resolves to {}, {}", host, shown, why));
      record_.hint = fmt::format(
          "agentexec: network: {}:{} refused ({}); to allow it, set network.allow_private = "
          "true or list that address in network.allow",
          host, port, record_.reason);
      return false;
    }
  }
  std::string error;
  for (const IpAddress& ip : addresses) {
    int fd = Dial(ip, port, &error);
    if (fd >= 0) {
      std::lock_guard<std::mutex> lock(mu_);
      upstream_fd_.reset(fd);
      record_.address = FormatAddress(ip);
      record_.allowed = true;
      return true;
    }
  }
  record_.allowed = true;  // allowed by the policy; the host did not answer
  record_.reason = fmt::format("cannot connect to {}:{}: {}", host, port, error);
  return false;
}

void Connection::ServeRequest() {
  char byte[1024];
  ssize_t n = ReadSome(client_.get(), byte, sizeof byte, kRequestTimeoutMs);
  if (n <= 0) return;  // nothing asked: no record
  std::string first(byte, static_cast<size_t>(n));
  if (first[0] == 0x05) {
    ServeSocks(std::move(first));
  } else {
    ServeHttp(std::move(first));
  }
}

namespace {

// A plain socket as the request and response loops read and write it (TlsStream is the other).
struct SocketSide {
  int fd;
  long Read(char* buf, size_t size, int timeout_ms) { return ReadSome(fd, buf, size, timeout_ms); }
  bool Write(std::string_view data) { return SendAll(fd, data); }
};

template <typename Side>
void Forbid(Side& client, const std::string& text) {
  const std::string body = text + "\n";
  client.Write(
      fmt::format("HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
                  "Connection: close\r\nContent-Length: {}\r\n\r\n{}",
                  body.size(), body));
}

// The Host header must name the host the request goes to: a server behind a shared address (a
// CDN) routes by it, so a mismatch would reach a host the policy never saw. "" when it does
// (or is absent), else the refusal's reason.
std::string HostMismatch(const HttpRequestHead& head, const std::string& host, uint16_t port) {
  const std::string* host_header = FindHeader(head, "host");
  if (host_header == nullptr) return "";
  const std::string want = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::string got = AsciiLower(*host_header);
  if (got.ends_with(".")) got.pop_back();
  const uint16_t web = head.scheme == "http" ? 80 : 443;
  if (got == want || got == fmt::format("{}:{}", want, port) ||
      (port == web && got == fmt::format("{}.:{}", want, web))) {
    return "";
  }
  return fmt::format("the Host header '{}' does not name the request's host {}", *host_header,
                     host);
}

// Reads until `reader` has a whole head (or fails), `pending` holding what came first; on
// return *used says how much of `pending` the head took.
template <typename Side>
bool ReadHead(HttpRequestReader& reader, Side& client, std::string* pending, size_t* used) {
  *used = 0;
  char buf[16384];
  for (;;) {
    *used += reader.Feed(pending->data() + *used, pending->size() - *used);
    if (reader.state() != HttpRequestReader::State::kHead) return true;
    const long n = client.Read(buf, sizeof buf, kRequestTimeoutMs);
    if (n <= 0) return false;
    pending->assign(buf, static_cast<size_t>(n));
    *used = 0;
  }
}

}  // namespace

template <typename Source, typename Sink>
bool Connection::ForwardRequest(HttpRequestReader& reader, std::string pending, bool tls,
                                Source& in, Sink& out) {
  const HttpRequestHead& head = reader.head();
  std::string text = fmt::format("{} {} HTTP/1.1\r\n", head.method, head.origin_form);
  if (Status fwd = ForwardHeaders(shared_->broker.get(), head, record_.host, record_.port, tls,
                                  &text, &record_.credentials);
      !fwd.ok()) {
    Refuse(fwd.message());
    record_.credentials.clear();
    Forbid(in, "agentexec: network: " + record_.reason);
    return false;
  }
  const bool covered =
      tls && shared_->broker && shared_->broker->Covers(record_.host, record_.port);
  // Without a Host header a server on a shared address answers as its default site: the
  // request goes to the host the policy checked, by name.
  if (FindHeader(head, "host") == nullptr) {
    const std::string name =
        record_.host.find(':') != std::string::npos ? "[" + record_.host + "]" : record_.host;
    text += record_.port == (tls ? 443 : 80) ? fmt::format("Host: {}\r\n", name)
                                             : fmt::format("Host: {}:{}\r\n", name, record_.port);
  }
  // Where the headers were rewritten, the encoding is the server's plain one (so the response
  // filter sees what the server sends), and an Expect is answered here rather than by the
  // server, whose 100 would otherwise wait behind the body this loop is still reading.
  if (covered) text += "Accept-Encoding: identity\r\n";
  text += "Connection: close\r\n\r\n";
  if (covered && FindHeader(head, "expect") != nullptr &&
      !in.Write("HTTP/1.1 100 Continue\r\n\r\n")) {
    return false;
  }
  record_.bytes_sent += text.size();
  if (!out.Write(text)) return false;
  char buf[16384];
  while (reader.state() == HttpRequestReader::State::kBody) {
    if (pending.empty()) {
      const long n = in.Read(buf, sizeof buf, kRequestTimeoutMs);
      if (n <= 0) return false;
      pending.assign(buf, static_cast<size_t>(n));
    }
    const size_t body = reader.Feed(pending.data(), pending.size());
    if (reader.state() == HttpRequestReader::State::kMalformed) {
      record_.reason = "malformed request body: " + reader.error();
      return false;
    }
    record_.bytes_sent += body;
    if (!out.Write(std::string_view(pending.data(), body))) return false;
    // After the request's end: a pipelined request (maybe for another host) is never sent.
    pending.clear();
  }
  // No half-close upstream: a server may take it for the client going away and drop the reply
  // (Node's does); Connection: close ends the exchange once the response is sent.
  return true;
}

template <typename Source, typename Sink>
void Connection::ForwardResponse(Source& in, Sink& out, ResponseFilter& filter) {
  char buf[16384];
  std::string ready;
  bool sent = false;
  auto refuse = [&] {
    record_.reason = fmt::format("{} {}", record_.host, filter.error());
    // Before a byte went out the command hears why; after (a 103's head), the stream just ends.
    if (!sent) Forbid(out, "agentexec: network: " + record_.reason);
  };
  for (;;) {
    const long n = in.Read(buf, sizeof buf, -1);
    if (n <= 0) break;
    record_.bytes_received += static_cast<uint64_t>(n);
    ready.clear();
    if (!filter.Feed(std::string_view(buf, static_cast<size_t>(n)), &ready)) return refuse();
    if (!ready.empty()) {
      if (!out.Write(ready)) return;
      sent = true;
    }
  }
  ready.clear();
  if (!filter.Finish(&ready)) return refuse();
  if (!ready.empty()) out.Write(ready);
}

std::string Connection::RefusedBeforeDial(const HttpRequestHead& head, bool covered) const {
  const bool connect = head.method == "CONNECT";
  const bool safe = head.method == "GET" || head.method == "HEAD" || head.method == "OPTIONS";
  // A terminated tunnel's requests are checked one by one inside it.
  if (shared_->policy.methods == Methods::kReadOnly && !safe && !(connect && covered)) {
    return connect ? "network.methods is read-only: no CONNECT tunnel"
                   : fmt::format("network.methods is read-only: {} is not allowed", head.method);
  }
  return connect ? "" : HostMismatch(head, head.host, head.port);
}

void Connection::ServeHttp(std::string first) {
  record_.protocol = "http";
  HttpRequestReader reader;
  SocketSide client{client_.get()};
  std::string pending = std::move(first);
  size_t used = 0;
  if (!ReadHead(reader, client, &pending, &used)) return;
  HttpRequestReader::State s = reader.state();
  if (s == HttpRequestReader::State::kMalformed || s == HttpRequestReader::State::kTooLarge) {
    Refuse(s == HttpRequestReader::State::kTooLarge ? "the request head is too large"
                                                    : "malformed request: " + reader.error());
    SendAll(client_.get(),
            "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"
            "Content-Length: 0\r\n\r\n");
    return;
  }
  const HttpRequestHead& head = reader.head();
  const bool connect = head.method == "CONNECT";
  record_.protocol = connect ? "https" : "http";
  record_.host = head.host;
  record_.port = head.port;
  if (!connect) record_.method = head.method;
  auto forbid = [&](const std::string& why) {
    Forbid(client, record_.hint.empty() ? "agentexec: network: " + why : record_.hint);
  };
  const bool covered = shared_->broker && shared_->broker->Covers(head.host, head.port);
  if (std::string why = RefusedBeforeDial(head, covered); !why.empty()) {
    Refuse(std::move(why));
    forbid(record_.reason);
    return;
  }
  if (!Open(head.host, head.port)) {
    if (!record_.allowed) {
      forbid(record_.reason);
      return;
    }
    const std::string body = fmt::format("agentexec: network: {}\n", record_.reason);
    SendAll(client_.get(), fmt::format("HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
                                       "Connection: close\r\nContent-Length: {}\r\n\r\n{}",
                                       body.size(), body));
    return;
  }
  std::string rest = pending.substr(used);
  if (connect) {
    if (!SendAll(client_.get(), "HTTP/1.1 200 Connection established\r\n\r\n")) return;
    if (covered) {
      Terminate(std::move(rest));
    } else {
      Relay(std::move(rest), /*inspect_tls=*/true, /*tls_required=*/true);
    }
    return;
  }
  // One request per connection: the head is sent on with Connection: close, the body up to its
  // end, and nothing after it (a pipelined request could name another host).
  SocketSide up{upstream_fd_.get()};
  // Plain HTTP: no credential goes into it (ForwardHeaders refuses a dummy), so nothing of
  // one can come back.
  if (!ForwardRequest(reader, std::move(rest), /*tls=*/false, client, up)) return;
  // The response, to its end.
  Pumps pumps;
  for (;;) {
    if (!WaitFor(upstream_fd_.get(), POLLIN, -1)) break;
    ssize_t n = pumps.Move(upstream_fd_.get(), client_.get(), Pumps::kDown);
    if (n == Pumps::kNothing) continue;
    if (n <= 0) break;
    record_.bytes_received += static_cast<uint64_t>(n);
  }
}

void Connection::Terminate(std::string first_up) {
  bool decided = false;
  if (!CheckHello(&first_up, /*tls_required=*/true, &decided)) return;
  Broker& broker = *shared_->broker;
  Result<SSL_CTX*> server = broker.authority().ServerContext(record_.host);
  Result<SSL_CTX*> upstream = UpstreamContext();
  if (!server.ok() || !upstream.ok()) {
    record_.reason = server.ok() ? upstream.message() : server.message();
    return;
  }
  TlsStream client;
  if (Status accepted = client.Accept(*server, client_.get(), first_up, kRequestTimeoutMs);
      !accepted.ok()) {
    record_.reason = accepted.message();
    return;
  }
  TlsStream up;
  if (Status connected = up.Connect(*upstream, upstream_fd_.get(), record_.host, kConnectTimeoutMs);
      !connected.ok()) {
    record_.reason = connected.message();
    const std::string body = fmt::format("agentexec: network: {}\n", record_.reason);
    client.Write(
        fmt::format("HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
                    "Connection: close\r\nContent-Length: {}\r\n\r\n{}",
                    body.size(), body));
    client.Shutdown();
    return;
  }
  HttpRequestReader reader(HttpRequestReader::Target::kOrigin);
  std::string pending;
  size_t used = 0;
  if (!ReadHead(reader, client, &pending, &used)) return;
  if (reader.state() == HttpRequestReader::State::kMalformed ||
      reader.state() == HttpRequestReader::State::kTooLarge) {
    Refuse("malformed request: " + reader.error());
    client.Write("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    client.Shutdown();
    return;
  }
  const HttpRequestHead& head = reader.head();
  record_.method = head.method;
  std::string refused;
  if (shared_->policy.methods == Methods::kReadOnly && head.method != "GET" &&
      head.method != "HEAD" && head.method != "OPTIONS") {
    refused = fmt::format("network.methods is read-only: {} is not allowed", head.method);
  } else {
    refused = HostMismatch(head, record_.host, record_.port);
  }
  if (!refused.empty()) {
    Refuse(refused);
    Forbid(client, "agentexec: network: " + refused);
    client.Shutdown();
    return;
  }
  if (ForwardRequest(reader, pending.substr(used), /*tls=*/true, client, up)) {
    ResponseFilter filter(broker.ResponseForms(record_.host, record_.port, head),
                          head.method == "HEAD");
    ForwardResponse(up, client, filter);
  }
  client.Shutdown();
}

void Connection::ServeSocks(std::string first) {
  record_.protocol = "socks5";
  Socks5Reader reader;
  std::string pending = std::move(first);
  size_t used = 0;
  char buf[1024];
  for (;;) {
    std::string reply;
    used += reader.Feed(pending.data() + used, pending.size() - used, &reply);
    if (!reply.empty() && !SendAll(client_.get(), reply)) return;
    if (reader.state() == Socks5Reader::State::kFailed) {
      Refuse("SOCKS5: " + reader.error());
      return;
    }
    if (reader.state() == Socks5Reader::State::kRequest) break;
    ssize_t n = ReadSome(client_.get(), buf, sizeof buf, kRequestTimeoutMs);
    if (n <= 0) return;
    pending.assign(buf, static_cast<size_t>(n));
    used = 0;
  }
  const Socks5Request& request = reader.request();
  if (request.port == 80) {
    // Plain HTTP is checked by its Host header, which only the HTTP proxy reads.
    record_.host = request.host;
    record_.port = request.port;
    Refuse("plain HTTP goes through HTTP_PROXY, not SOCKS5");
    SendAll(client_.get(), Socks5Reader::Reply(Socks5Reply::kNotAllowed));
    return;
  }
  if (!Open(request.host, request.port)) {
    SendAll(client_.get(), Socks5Reader::Reply(record_.allowed ? Socks5Reply::kHostUnreachable
                                                               : Socks5Reply::kNotAllowed));
    return;
  }
  if (!SendAll(client_.get(), Socks5Reader::Reply(Socks5Reply::kSucceeded))) return;
  // TLS on any port is held to its server name; on 443 nothing else may start the stream.
  Relay(pending.substr(used), /*inspect_tls=*/true, /*tls_required=*/request.port == 443);
}

bool Connection::CheckHello(std::string* pending, bool tls_required, bool* decided) {
  ClientHelloReader hello;
  hello.Feed(pending->data(), pending->size());
  char buf[16384];
  while (hello.state() == ClientHelloReader::State::kNeedMore) {
    ssize_t n = ReadSome(client_.get(), buf, sizeof buf, kRequestTimeoutMs);
    if (n <= 0) return false;
    hello.Feed(buf, static_cast<size_t>(n));
  }
  *pending = std::string(hello.buffered());
  *decided = true;
  switch (hello.state()) {
    case ClientHelloReader::State::kNotTls:
      if (!tls_required) return true;
      Refuse(fmt::format("the tunnel to {}:{} did not start with TLS", record_.host, record_.port));
      return false;
    case ClientHelloReader::State::kDone: {
      const std::string& name = hello.server_name();
      const bool literal = ParseIpLiteral(record_.host).has_value();
      if ((name.empty() && literal) || name == record_.host) return true;
      Refuse(name.empty() ? fmt::format("the TLS ClientHello names no server; the tunnel is to {}",
                                        record_.host)
                          : fmt::format("the TLS server name '{}' is not the tunnel's host {}",
                                        name, record_.host));
      record_.allowed = false;
      return false;
    }
    default:
      Refuse(fmt::format("the TLS ClientHello cannot be read: {}", hello.error()));
      return false;
  }
}

void Connection::Relay(std::string first_up, bool inspect_tls, bool tls_required) {
  const int client = client_.get();
  const int up = upstream_fd_.get();
  // The client's first bytes decide before anything of it goes upstream; what the server says
  // first (SSH's banner) flows meanwhile.
  bool decided = !inspect_tls;
  Pumps pumps;
  bool client_open = true, up_open = true;
  if (decided && !first_up.empty()) {
    if (!SendAll(up, first_up)) return;
    record_.bytes_sent += first_up.size();
    first_up.clear();
  }
  char peek[4096];
  while (client_open || up_open) {
    if (!decided && (!first_up.empty() || !client_open)) {
      if (!client_open) return;
      if (!CheckHello(&first_up, tls_required, &decided)) {
        record_.bytes_sent = 0;
        return;
      }
      if (!SendAll(up, first_up)) return;
      record_.bytes_sent += first_up.size();
      first_up.clear();
    }
    pollfd fds[2] = {{client, static_cast<short>(client_open ? POLLIN : 0), 0},
                     {up, static_cast<short>(up_open ? POLLIN : 0), 0}};
    int rc = ::poll(fds, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return;
    if (client_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      if (!decided) {
        ssize_t n = ::recv(client, peek, sizeof peek, 0);
        if (n <= 0) return;
        first_up.append(peek, static_cast<size_t>(n));
      } else {
        ssize_t n = pumps.Move(client, up, Pumps::kUp);
        if (n == Pumps::kNothing) continue;
        if (n < 0) return;
        if (n == 0) {
          client_open = false;
          ::shutdown(up, SHUT_WR);
        }
        record_.bytes_sent += static_cast<uint64_t>(n);
      }
    }
    if (up_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = pumps.Move(up, client, Pumps::kDown);
      if (n == Pumps::kNothing) continue;
      if (n < 0) return;
      if (n == 0) {
        up_open = false;
        ::shutdown(client, SHUT_WR);
        if (!decided) return;
      }
      record_.bytes_received += static_cast<uint64_t>(n);
    }
  }
}

// A command's listener: accepts on its own thread, a thread per connection.
class LeaseImpl : public Proxy::Lease {
 public:
  LeaseImpl(std::shared_ptr<Proxy::Shared> shared, Fd listener)
      : shared_(std::move(shared)),
        listener_(std::move(listener)),
        wake_(::eventfd(0, EFD_CLOEXEC)) {
    pthread_attr_t attr;
    ::pthread_attr_init(&attr);
    ::pthread_attr_setstacksize(&attr, kThreadStack);
    started_ = ::pthread_create(&acceptor_, &attr, &LeaseImpl::AcceptMain, this) == 0;
    ::pthread_attr_destroy(&attr);
  }
  ~LeaseImpl() override { Stop(); }
  LeaseImpl(const LeaseImpl&) = delete;
  LeaseImpl& operator=(const LeaseImpl&) = delete;
  LeaseImpl(LeaseImpl&&) = delete;
  LeaseImpl& operator=(LeaseImpl&&) = delete;

  std::vector<ConnectionRecord> Finish() override {
    Stop();
    std::vector<ConnectionRecord> records;
    std::lock_guard<std::mutex> lock(mu_);
    for (Entry& e : entries_) {
      ConnectionRecord r = e.connection->TakeRecord();
      if (!r.protocol.empty()) records.push_back(std::move(r));
    }
    entries_.clear();
    return records;
  }

 private:
  struct Entry {
    std::unique_ptr<Connection> connection;
    pthread_t thread{};
    bool started = false;
  };

  static void* AcceptMain(void* self) {
    static_cast<LeaseImpl*>(self)->Accept();
    return nullptr;
  }
  static void* ServeMain(void* connection) {
    static_cast<Connection*>(connection)->Serve();
    return nullptr;
  }

  void Accept() {
    for (;;) {
      pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
      int rc = ::poll(fds, 2, -1);
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0 || (fds[1].revents & POLLIN)) return;
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
        return;
      }
      // A relay passes on what it has at once: Nagle would hold a small write (a TLS record
      // the proxy wrote itself, an interactive stream's bytes) for the peer's ACK.
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        ::close(fd);
        return;
      }
      Entry& e = entries_.emplace_back();
      e.connection = std::make_unique<Connection>(shared_, Fd(fd));
      pthread_attr_t attr;
      ::pthread_attr_init(&attr);
      ::pthread_attr_setstacksize(&attr, kThreadStack);
      e.started =
          ::pthread_create(&e.thread, &attr, &LeaseImpl::ServeMain, e.connection.get()) == 0;
      ::pthread_attr_destroy(&attr);
    }
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopping_ = true;
    }
    uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof one);
    if (started_) ::pthread_join(acceptor_, nullptr);
    listener_.reset();
    std::lock_guard<std::mutex> lock(mu_);
    for (Entry& e : entries_) {
      e.connection->Interrupt();
      if (e.started) ::pthread_join(e.thread, nullptr);
    }
    stopped_ = true;
  }

  std::shared_ptr<Proxy::Shared> shared_;
  Fd listener_;
  Fd wake_;
  pthread_t acceptor_{};
  bool started_ = false;
  std::mutex mu_;
  std::deque<Entry> entries_;
  bool stopping_ = false;
  bool stopped_ = false;
};

}  // namespace

Proxy::Proxy(Policy policy, std::unique_ptr<Resolver> resolver,
             std::unique_ptr<LocalAddresses> local, std::shared_ptr<Broker> broker)
    : shared_(std::make_shared<Shared>()) {
  shared_->policy = std::move(policy);
  shared_->resolver = std::move(resolver);
  shared_->local = std::move(local);
  shared_->broker = std::move(broker);
}

Proxy::~Proxy() = default;

const Policy& Proxy::policy() const {
  return shared_->policy;
}

std::unique_ptr<Proxy::Lease> Proxy::Attach(Fd listener) {
  return std::make_unique<LeaseImpl>(shared_, std::move(listener));
}

std::vector<std::string> ProxyEnvironment(uint16_t port) {
  const std::string http = fmt::format("http://127.0.0.1:{}", port);
  const std::string socks = fmt::format("socks5h://127.0.0.1:{}", port);
  // The command's own loopback (its test servers) is reached directly.
  const std::string no_proxy = "localhost,127.0.0.1,::1";
  std::vector<std::string> env;
  auto set = [&](std::initializer_list<const char*> names, const std::string& value) {
    for (const char* name : names) env.push_back(fmt::format("{}={}", name, value));
  };
  // curl, wget and git read only the lower-case http_proxy for http:// URLs; others upper case.
  set({"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "WS_PROXY", "ws_proxy",
       "WSS_PROXY", "wss_proxy", "npm_config_proxy", "npm_config_https_proxy", "YARN_HTTP_PROXY",
       "YARN_HTTPS_PROXY", "BUNDLE_HTTP_PROXY", "BUNDLE_HTTPS_PROXY", "PIP_PROXY",
       "CARGO_HTTP_PROXY"},
      http);
  set({"ALL_PROXY", "all_proxy"}, socks);
  set({"NO_PROXY", "no_proxy", "npm_config_noproxy"}, no_proxy);
  // Node's own fetch reads the variables only with this (Node 22.21 and later).
  env.emplace_back("NODE_USE_ENV_PROXY=1");
  env.push_back(
      fmt::format("GIT_SSH_COMMAND=ssh -o ProxyCommand='nc -X 5 -x 127.0.0.1:{} %h %p'", port));
  // The JVM (Maven, Gradle) reads no variable, only its properties.
  env.push_back(fmt::format(
      "JAVA_TOOL_OPTIONS=-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort={0} "
      "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort={0} -Dhttp.nonProxyHosts=localhost|127.0.0.1",
      port));
  return env;
}

}  // namespace ae::net
