#include "base/base64.h"

#include <openssl/evp.h>

namespace ae {

std::string Base64Encode(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock writes a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

bool Base64Decode(std::string_view text, std::string* out) {
  out->clear();
  if (text.size() % 4 != 0) return false;
  if (text.empty()) return true;
  // EVP_DecodeBlock takes padding as zero bits and counts them in its length; '=' may only end
  // the text, at most twice.
  size_t pad = 0;
  while (pad < 2 && text.size() > pad && text[text.size() - 1 - pad] == '=') ++pad;
  if (text.substr(0, text.size() - pad).find('=') != std::string_view::npos) return false;
  out->resize(text.size() / 4 * 3);
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out->data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0 || static_cast<size_t>(n) < pad) return false;
  out->resize(static_cast<size_t>(n) - pad);
  return true;
}

}  // namespace ae
