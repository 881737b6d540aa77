// The proxied network (a `[network]` allow-list): each command gets a network namespace of its
// own with only `lo`, in which 127.0.0.1:<port> listens. The listening socket, made inside
// the namespace before the command starts, goes to agentexec over a socket pair; agentexec's
// proxy (net/proxy.h) accepts on it and serves each connection on the host's network, so the
// command reaches nothing but the proxy, whatever it does with its environment: no helper
// process, no socat, no Unix-socket bridge.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "base/fd.h"
#include "base/result.h"

namespace ae::sandbox {

struct NetworkPlan {
  uint16_t proxy_port = 0;  // 0: no namespace of its own (the network off, or all of it)
};

// The child's step, after the mount namespace (whose user namespace gives the capability) and
// before capabilities are dropped: unshare(CLONE_NEWNET), `lo` up, a listening TCP socket on
// 127.0.0.1:port sent over `send_fd` (-1: none is wanted; the namespace alone then leaves the
// command without any network). Async-signal-safe.
bool EnterNetworkNamespace(const NetworkPlan& plan, int send_fd, const char** step,
                           int* err) noexcept;

// The socket pair the listener travels over: agentexec keeps `parent`, the child gets `child`.
Status MakeListenerChannel(Fd* parent, Fd* child);

// In agentexec, once the child has exec'd: the listener it sent, or an invalid Fd.
Fd ReceiveListener(int parent);

// What lives exactly as long as a command's network namespace: the proxy's hold on its
// listener. Ended (End) once the command's whole tree has been reaped, so every connection's
// record is final.
class NetworkAttachment {
 public:
  NetworkAttachment() = default;
  virtual ~NetworkAttachment() = default;
  NetworkAttachment(const NetworkAttachment&) = delete;
  NetworkAttachment& operator=(const NetworkAttachment&) = delete;
  NetworkAttachment(NetworkAttachment&&) = delete;
  NetworkAttachment& operator=(NetworkAttachment&&) = delete;
  virtual void End() = 0;
};
using AttachNetwork = std::function<std::unique_ptr<NetworkAttachment>(Fd listener)>;

}  // namespace ae::sandbox
