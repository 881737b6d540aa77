// Handing a descriptor to another process over a Unix socket (SCM_RIGHTS), with a 32-bit code
// beside it: the sandbox's set-up sends agentexec what it made inside the command's namespaces
// (the write watch's listener, the proxy's listening socket). One mechanism for both.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "base/fd.h"

namespace ae {

// Sends `code` and, when `fd` >= 0, the descriptor. Async-signal-safe (the forked child calls
// it). False with errno when the message could not be sent.
bool SendDescriptor(int socket, int fd, int32_t code) noexcept;

// Receives one such message: its code in *code and the descriptor (close-on-exec), or an invalid
// Fd when none came with it. `flags` for recvmsg (MSG_DONTWAIT where the message must already be
// there). Returns the bytes read: sizeof(int32_t) for a whole message, 0 when the sender closed
// its end without one, -1 with errno.
ssize_t ReceiveDescriptor(int socket, int flags, int32_t* code, Fd* fd);

}  // namespace ae
