// UUIDv7 (RFC 9562): 48-bit Unix milliseconds, then random bits. Thread ids sort by time.
#pragma once

#include <string>

namespace ae {

std::string NewUuidV7();

}  // namespace ae
