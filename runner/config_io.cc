#include "runner/config_io.h"

#include <unistd.h>

#include <cerrno>

#include "base/read_file.h"

namespace ae {

Result<std::optional<std::string>> ReadFileIfExists(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return std::optional<std::string>();
  Result<std::string> text = ReadRegularFile(path);
  if (!text.ok()) return text.error();
  return std::optional<std::string>(std::move(*text));
}

}  // namespace ae
