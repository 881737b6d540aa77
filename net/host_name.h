// Host names as the proxy compares them: one spelling for the policy, the request parsers, the
// TLS server name and the record, so a name matches whichever way a command wrote it and no
// two parts of the proxy read one differently.
#pragma once

#include <string>
#include <string_view>

namespace ae::net {

// ASCII lower case (host names and HTTP header names are compared without case).
std::string AsciiLower(std::string_view s);

// A host name as the policy matches it: lower-cased, one trailing dot dropped, labels of
// letters, digits, '-' and '_' (some service names carry one), none empty, at most 63 bytes
// each and 253 in all. "" when `host` is no such name: anything else ('\\', '%', '@', a
// space, a NUL) could be read differently by the resolver, the policy and the server.
std::string NormalizeHostName(std::string_view host);

}  // namespace ae::net
