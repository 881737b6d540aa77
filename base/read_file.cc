#include "base/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ae {
namespace {

Result<std::string> ReadFrom(int fd, size_t max_bytes, bool first_line) {
  std::string out;
  char buf[65536];
  for (;;) {
    size_t want = sizeof buf;
    if (max_bytes > 0) {
      if (out.size() >= max_bytes) break;
      want = std::min(want, max_bytes - out.size());
    }
    ssize_t n = ::read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return MakeError(std::strerror(errno));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (first_line) {
      if (size_t nl = out.find('\n'); nl != std::string::npos) {
        out.resize(nl);
        break;
      }
    }
  }
  return out;
}

}  // namespace

Result<Fd> OpenRegularFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) return MakeError(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return MakeError(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return MakeError(std::strerror(EISDIR));
  if (!S_ISREG(st.st_mode)) return MakeError("not a regular file");
  return fd;
}

Result<std::string> ReadRegularFile(const std::string& path, size_t max_bytes) {
  Result<Fd> fd = OpenRegularFile(path);
  if (!fd.ok()) return fd.error();
  return ReadFrom(fd->get(), max_bytes, false);
}

Result<std::string> ReadRegularFirstLine(const std::string& path, size_t max_bytes) {
  Result<Fd> fd = OpenRegularFile(path);
  if (!fd.ok()) return fd.error();
  return ReadFrom(fd->get(), max_bytes, true);
}

Result<std::string> ReadNamedFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return MakeError(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode)) return MakeError(std::strerror(EISDIR));
  return ReadFrom(fd.get(), 0, false);
}

}  // namespace ae
