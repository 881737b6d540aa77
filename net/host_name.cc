#include "net/host_name.h"

namespace ae::net {

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string NormalizeHostName(std::string_view host) {
  std::string name = AsciiLower(host);
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (name.empty() || name.size() > 253) return "";
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return "";
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok || ++label > 63) return "";
  }
  return label > 0 ? name : "";
}

}  // namespace ae::net
