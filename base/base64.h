// Base64 (RFC 4648, padded), by OpenSSL: Basic auth's user:password (net/credentials.h), data: URLs
// of images for the model (config/session_config.cc).
#pragma once

#include <string>
#include <string_view>

namespace ae {

std::string Base64Encode(std::string_view data);
// False (and *out unspecified) when `text` is not padded base64.
bool Base64Decode(std::string_view text, std::string* out);

}  // namespace ae
