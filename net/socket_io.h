// The proxy's blocking socket calls, shared by its connection threads (net/proxy.cc) and the
// TLS it terminates (net/tls_stream.cc): EINTR retried, SIGPIPE never raised.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string_view>

namespace ae::net {

// Waits until `fd` is readable (or writable); false on timeout (-1: none) or error.
bool WaitFor(int fd, short events, int timeout_ms);

// Sends all of `data` (MSG_NOSIGNAL); false when the peer is gone.
bool SendAll(int fd, std::string_view data);

// Reads what is there (waiting up to `timeout_ms`): bytes, 0 at EOF, -1 on error or timeout.
ssize_t ReadSome(int fd, char* buf, size_t size, int timeout_ms);

}  // namespace ae::net
