#include "base/read_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/beneath.h"

namespace ae {
namespace {

constexpr int kReadFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;

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

Error OpenError(int err) {
  if (err == ENOENT) return MakeError(std::strerror(err), kFileNotFound);
  return MakeError(std::strerror(err));
}

std::string OnPseudo(const char* fs) {
  return std::string("on the ") + fs + " pseudo file system";
}

// The checks every reader makes on what it opened.
Result<Fd> CheckOpened(Fd fd) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return MakeError(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return MakeError(std::strerror(EISDIR));
  if (!S_ISREG(st.st_mode)) return MakeError("not a regular file");
  if (const char* fs = PseudoFileSystem(fd.get())) return MakeError(OnPseudo(fs));
  return fd;
}

Result<std::string> ReadOpened(Result<Fd> fd, size_t max_bytes, bool first_line) {
  if (!fd.ok()) return fd.error();
  return ReadFrom(fd->get(), max_bytes, first_line);
}

}  // namespace

const char* PseudoFileSystem(int fd) {
  struct statfs sfs {};
  if (::fstatfs(fd, &sfs) != 0) return "unknown";  // fail closed
  switch (static_cast<unsigned long>(sfs.f_type) & 0xffffffffUL) {
    case PROC_SUPER_MAGIC:
      return "proc";
    case SYSFS_MAGIC:
      return "sysfs";
    case DEBUGFS_MAGIC:
      return "debugfs";
    case TRACEFS_MAGIC:
      return "tracefs";
    case SECURITYFS_MAGIC:
      return "securityfs";
    case CGROUP_SUPER_MAGIC:
      return "cgroup";
    case CGROUP2_SUPER_MAGIC:
      return "cgroup2";
    case BPF_FS_MAGIC:
      return "bpf";
    case EFIVARFS_MAGIC:
      return "efivarfs";
    case PSTOREFS_MAGIC:
      return "pstore";
    case SELINUX_MAGIC:
      return "selinuxfs";
    case SMACK_MAGIC:
      return "smackfs";
    case 0x62656570:  // configfs (not in every linux/magic.h)
      return "configfs";
    default:
      return nullptr;
  }
}

Result<Fd> OpenRegularFile(const std::string& path) {
  Fd fd(::open(path.c_str(), kReadFlags));
  if (!fd) return OpenError(errno);
  return CheckOpened(std::move(fd));
}

Result<Fd> OpenRegularFileBeneath(int dirfd, const std::string& rel) {
  Fd fd;
  if (int err = OpenBeneath(dirfd, rel, kReadFlags, 0, kBeneath, &fd); err != 0) {
    if (err == EXDEV)
      return MakeError("a symbolic link leads outside the directory it is read from");
    return OpenError(err);
  }
  return CheckOpened(std::move(fd));
}

Result<std::string> ReadRegularFile(const std::string& path, size_t max_bytes) {
  return ReadOpened(OpenRegularFile(path), max_bytes, false);
}

Result<std::string> ReadRegularFileBeneath(int dirfd, const std::string& rel, size_t max_bytes) {
  return ReadOpened(OpenRegularFileBeneath(dirfd, rel), max_bytes, false);
}

Result<std::string> ReadRegularFirstLine(const std::string& path, size_t max_bytes) {
  return ReadOpened(OpenRegularFile(path), max_bytes, true);
}

Result<std::string> ReadRegularFirstLineBeneath(int dirfd, const std::string& rel,
                                                size_t max_bytes) {
  return ReadOpened(OpenRegularFileBeneath(dirfd, rel), max_bytes, true);
}

Result<std::string> ReadNamedFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return OpenError(errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode)) return MakeError(std::strerror(EISDIR));
  if (const char* fs = PseudoFileSystem(fd.get())) return MakeError(OnPseudo(fs));
  return ReadFrom(fd.get(), 0, false);
}

}  // namespace ae
