// A command's attempt past the egress proxy (sandbox/direct_attempt.h), as the same record the
// proxy keeps of the connections it serves (net/proxy.h ConnectionRecord): one network_request
// item, refused, with the reason and the line the model reads.
#pragma once

#include <cstdint>
#include <optional>

#include "net/proxy.h"
#include "sandbox/direct_attempt.h"

namespace ae {

// protocol "direct" (a connect), "datagram" (a sendto with an address: UDP or a raw socket),
// "dns" (either, to port 53) or "raw" (a raw socket made, no host). `proxy_port`: where the
// command's namespace has the proxy.
net::ConnectionRecord DirectRecord(const sandbox::DirectAttempt& attempt, uint16_t proxy_port);

}  // namespace ae
