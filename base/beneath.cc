#include "base/beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "base/write_all.h"

namespace ae {
namespace {

std::atomic<bool> pretend_no_openat2{false};

long Openat2(int dirfd, const char* path, int flags, mode_t mode, uint64_t resolve) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = resolve;
  long fd;
  do {
    fd = ::syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
  } while (fd < 0 && errno == EINTR);
  return fd;
}

bool KernelHasOpenat2() {
  static const bool available = [] {
    long fd = Openat2(AT_FDCWD, "/", O_PATH | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS);
    if (fd >= 0) {
      ::close(static_cast<int>(fd));
      return true;
    }
    return errno != ENOSYS;
  }();
  return available;
}

// Without openat2: every component opened with O_NOFOLLOW from the one before, so no symlink
// (magic or not) is followed anywhere, and ".." or an absolute path is refused outright.
int WalkBeneath(int dirfd, std::string_view rel, int flags, mode_t mode, Fd* out) {
  if (!rel.empty() && rel.front() == '/') return EXDEV;
  std::vector<std::string> parts;
  while (!rel.empty()) {
    size_t slash = rel.find('/');
    std::string_view part = rel.substr(0, slash);
    if (part == "..") return EXDEV;
    if (!part.empty() && part != ".") parts.emplace_back(part);
    if (slash == std::string_view::npos) break;
    rel.remove_prefix(slash + 1);
  }
  if (parts.empty()) parts.emplace_back(".");
  Fd walked;
  int at = dirfd;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    Fd next(::openat(at, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      int err = errno;
      struct stat st {};
      // O_PATH | O_NOFOLLOW on a symlink says ENOTDIR; name it as openat2 would.
      if (err == ENOTDIR && ::fstatat(at, parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        err = ELOOP;
      }
      return err;
    }
    walked = std::move(next);
    at = walked.get();
  }
  out->reset(::openat(at, parts.back().c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode));
  return *out ? 0 : errno;
}

}  // namespace

bool Openat2Available() {
  return !pretend_no_openat2.load() && KernelHasOpenat2();
}

void PretendNoOpenat2ForTesting(bool pretend) {
  pretend_no_openat2.store(pretend);
}

int OpenBeneath(int dirfd, std::string_view rel, int flags, mode_t mode, unsigned how, Fd* out) {
  if (!Openat2Available()) return WalkBeneath(dirfd, rel, flags, mode, out);
  uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  if (how & kBeneathNoSymlinks) resolve |= RESOLVE_NO_SYMLINKS;
  if (how & kBeneathNoXdev) resolve |= RESOLVE_NO_XDEV;
  const std::string path(rel.empty() ? std::string_view(".") : rel);
  long fd = Openat2(dirfd, path.c_str(), flags | O_CLOEXEC, mode, resolve);
  if (fd < 0) return errno;
  out->reset(static_cast<int>(fd));
  return 0;
}

int MakeDirsBeneath(int dirfd, std::string_view rel, unsigned how, Fd* out) {
  Fd dir;
  if (int err = OpenBeneath(dirfd, ".", O_RDONLY | O_DIRECTORY, 0, how, &dir); err != 0) {
    return err;
  }
  while (!rel.empty()) {
    size_t slash = rel.find('/');
    const std::string part(rel.substr(0, slash));
    rel.remove_prefix(slash == std::string_view::npos ? rel.size() : slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") return EXDEV;
    Fd next;
    if ((how & kBeneathFresh) && rel.empty()) {
      if (::mkdirat(dir.get(), part.c_str(), 0777) != 0) return errno;
      if (int err = OpenBeneath(dir.get(), part, O_RDONLY | O_DIRECTORY, 0, how, &next); err != 0) {
        return err;
      }
      dir = std::move(next);
      break;
    }
    int err = OpenBeneath(dir.get(), part, O_RDONLY | O_DIRECTORY, 0, how, &next);
    if (err == ENOENT) {
      if (::mkdirat(dir.get(), part.c_str(), 0777) != 0 && errno != EEXIST) return errno;
      err = OpenBeneath(dir.get(), part, O_RDONLY | O_DIRECTORY, 0, how, &next);
    }
    if (err != 0) return err;
    dir = std::move(next);
  }
  *out = std::move(dir);
  return 0;
}

int MoveAsideAt(int dirfd, const std::string& name, std::string_view prefix, std::string* aside) {
  aside->clear();
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return EINVAL;
  }
  for (int k = 1; k < 10000; ++k) {
    std::string candidate = std::string(prefix) + "-" + name + "-" + std::to_string(k);
    int moved = ::renameat2(dirfd, name.c_str(), dirfd, candidate.c_str(), RENAME_NOREPLACE);
    if (moved != 0 && errno == EINVAL) {
      // A file system without RENAME_NOREPLACE: look first (the directory is agentexec's own,
      // so nothing races to fill the name between the look and the rename).
      struct stat st {};
      if (::fstatat(dirfd, candidate.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
      moved = ::renameat(dirfd, name.c_str(), dirfd, candidate.c_str());
    }
    if (moved == 0) {
      *aside = std::move(candidate);
      return 0;
    }
    if (errno == ENOENT) return 0;  // nothing to move
    if (errno != EEXIST) return errno;
  }
  return EEXIST;
}

int ReplaceAt(int dirfd, const std::string& name, std::string_view content, mode_t mode,
              bool exact_mode) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return EINVAL;
  }
  // An unpredictable name: one a command guessed and planted makes nothing fail either. It
  // carries `name` so a leftover is recognisable (and a name too long to carry fails here,
  // before anything was replaced).
  std::string tmp;
  Fd fd;
  for (int attempt = 0; attempt < 8 && !fd; ++attempt) {
    uint64_t r = 0;
    if (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) return EIO;
    char hex[17];
    for (int i = 0; i < 16; ++i) hex[i] = "0123456789abcdef"[(r >> (4 * i)) & 0xf];
    hex[16] = '\0';
    tmp = "." + name + ".ae-tmp-" + hex;
    fd.reset(
        ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd && errno != EEXIST) return errno;
  }
  if (!fd) return EEXIST;
  auto fail = [&](int err) {
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return err;
  };
  if (exact_mode && ::fchmod(fd.get(), mode) != 0) return fail(errno);
  int err = 0;
  if (!WriteAll(fd.get(), content, nullptr, &err).ok()) return fail(err != 0 ? err : EIO);
  if (::fsync(fd.get()) != 0) return fail(errno);
  fd.reset();
  // Same directory descriptor on both sides: the name replaced is the one in `dirfd`.
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) return fail(errno);
  return 0;
}

}  // namespace ae
