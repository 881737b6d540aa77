// A command's reach for the network past the proxy, seen by the network watch (seccomp.h):
// a connect, a datagram or a raw socket that the command's network namespace refuses because
// only the proxy is there. The kernel decides; this is the record of what was tried, read
// from the calling process while it waits in the call.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "sandbox/seccomp.h"

namespace ae::sandbox {

struct DirectAttempt {
  seccomp::NetworkCall call = seccomp::NetworkCall::kNone;
  int family = 0;            // AF_INET or AF_INET6; 0 for a raw socket
  uint8_t address[16] = {};  // network order; the first 4 for AF_INET
  uint16_t port = 0;         // host order
  bool loopback = false;     // to the namespace's own lo (nothing of the command's there)
  bool operator==(const DirectAttempt& other) const;
};

// The destination of a notified call (`args` as the notification gives them), read from
// `pid`'s memory: false when it names no IP address (AF_UNIX, AF_UNSPEC, unreadable), which
// is nothing to record. A raw socket has none and is always true. Sets `loopback` for
// 127.0.0.0/8, ::1, their IPv4-mapped forms and the unspecified address.
bool ReadDestination(pid_t pid, seccomp::NetworkCall call, const uint64_t args[6],
                     DirectAttempt* out);

// Whether a loopback destination is served inside the command's own network namespace: the
// proxy's port, or a port that something of the command's listens on (TCP) or is bound to
// (UDP), from /proc/PID/net. `scratch` is reused from call to call.
bool ServedInside(pid_t pid, const DirectAttempt& attempt, uint16_t proxy_port,
                  std::string* scratch);

// /proc/net/{tcp,udp}[6] text: whether a socket in `state` (hex, "0A" listening, "07" a bound
// UDP socket) has local port `port`. Exposed for tests.
bool TableHasPort(const std::string& table, uint16_t port, const char* state);

}  // namespace ae::sandbox
