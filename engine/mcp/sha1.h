// SHA-1 (OpenSSL's), only to shorten over-long MCP tool names the way codex does (not for
// security).
#pragma once

#include <string>

namespace ae {

std::string Sha1Hex(const std::string& data);  // 40 lowercase hex digits

}  // namespace ae
