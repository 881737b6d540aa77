#include "config/config_io.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/fd.h"
#include "base/read_file.h"

namespace ae {

Result<std::optional<std::string>> ReadFileIfExists(const std::string& path,
                                                    const std::string& beneath) {
  Result<std::string> text = MakeError("");
  if (beneath.empty()) {
    text = ReadRegularFile(path);
  } else {
    Fd dir(::open(beneath.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir && errno == ENOENT) return std::optional<std::string>();
    if (!dir) return MakeError(std::strerror(errno));
    const std::string rel =
        std::filesystem::path(path).lexically_relative(std::filesystem::path(beneath)).string();
    text = ReadRegularFileBeneath(dir.get(), rel);
  }
  if (!text.ok() && text.error().code == kFileNotFound) return std::optional<std::string>();
  if (!text.ok()) return text.error();
  return std::optional<std::string>(std::move(*text));
}

}  // namespace ae
