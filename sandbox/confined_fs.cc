#include "sandbox/confined_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "base/beneath.h"
#include "sandbox/paths.h"

namespace ae::sandbox {
namespace {

// The components of `rel` ("a/b/c"), which is normalised: no empty, "." or ".." pieces.
std::vector<std::string_view> Components(std::string_view rel) {
  std::vector<std::string_view> out;
  while (!rel.empty()) {
    size_t slash = rel.find('/');
    out.push_back(rel.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rel.remove_prefix(slash + 1);
  }
  return out;
}

// `path` below `root` ("" when equal). Both normalised, `path` under `root`.
std::string_view Beneath(std::string_view path, std::string_view root) {
  if (path.size() <= root.size()) return {};
  return path.substr(root == "/" ? 1 : root.size() + 1);
}

// Git runs hooks and reads config from any `.git` it finds, and agentexec reads its own
// configuration from `.agentexec`: a patch never writes into either, at any depth.
bool NamesProtectedDir(std::string_view rel) {
  for (std::string_view c : Components(rel)) {
    if (c == ".git" || c == ".agentexec") return true;
  }
  return false;
}

}  // namespace

bool ConfinedFs::Openat2Available() {
  return ae::Openat2Available();
}

const char* FileTypeName(mode_t type) {
  switch (type & S_IFMT) {
    case S_IFIFO:
      return "a FIFO";
    case S_IFSOCK:
      return "a socket";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFDIR:
      return "a directory";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "not a regular file";
  }
}

int ConfinedFs::WriteCheck(const std::string& path) const {
  if (policy_.unrestricted()) return 0;
  if (policy_.mode == Mode::kReadOnly) return EACCES;
  if (path.empty() || path.front() != '/') return EACCES;
  const std::string* root = nullptr;
  for (const std::string& r : policy_.writable_roots) {
    if (IsUnder(path, r) && (root == nullptr || r.size() > root->size())) root = &r;
  }
  if (root == nullptr) return EACCES;
  if (IsUnderAny(path, policy_.read_only_carveouts)) return EROFS;
  if (NamesProtectedDir(Beneath(path, *root))) return EROFS;
  return 0;
}

int ConfinedFs::Target(const std::string& path, std::string* resolved) const {
  if (path.empty() || path.front() != '/') return EINVAL;
  const std::string lexical = NormalizePath(path);
  // The spelling can only add a refusal (a carve-out named directly).
  if (!policy_.unrestricted() && WriteCheck(lexical) == EROFS) {
    *resolved = lexical;
    return EROFS;
  }
  *resolved = ResolvePath(lexical);
  return WriteCheck(*resolved);
}

int ConfinedFs::OpenRoot(const std::string& root, Fd* out) const {
  if (!Openat2Available()) {
    if (!policy_.unrestricted()) return ENOSYS;
    out->reset(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return *out ? 0 : errno;
  }
  // Roots are canonical (realpath'd when the policy was built): no symlink on the way.
  Fd slash(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!slash) return errno;
  return ae::OpenBeneath(slash.get(), std::string_view(root).substr(1), O_RDONLY | O_DIRECTORY, 0,
                         kBeneathNoSymlinks, out);
}

int ConfinedFs::OpenBeneath(int dirfd, const std::string& rel, int flags, mode_t mode,
                            Fd* out) const {
  // Without openat2 this is only reached unrestricted (OpenRoot refuses otherwise), where the
  // base walk refuses every symlink: danger-full-access on an old kernel keeps working.
  // A confined command cannot mount, so a mount point inside a root was not made by one; the
  // write stays on the root's own file system.
  unsigned how = kBeneathNoSymlinks;
  if (!policy_.unrestricted()) how |= kBeneathNoXdev;
  return ae::OpenBeneath(dirfd, rel, flags, mode, how, out);
}

int ConfinedFs::OpenParent(const std::string& path, Location* out,
                           std::vector<Location>* made) const {
  if (int err = WriteCheck(path); err != 0) return err;
  std::string root = "/";
  if (!policy_.unrestricted()) {
    root.clear();
    for (const std::string& r : policy_.writable_roots) {
      if (IsUnder(path, r) && r.size() > root.size()) root = r;
    }
  }
  std::vector<std::string_view> parts = Components(Beneath(path, root));
  if (parts.empty()) return EINVAL;  // the root itself is not a file
  for (std::string_view p : parts) {
    if (p.empty() || p == "." || p == "..") return EINVAL;  // callers pass normalised paths
  }
  Fd dir;
  if (int err = OpenRoot(root, &dir); err != 0) return err;
  std::string walked = root == "/" ? "" : root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string name(parts[i]);
    walked += "/" + name;
    Fd next;
    int err = OpenBeneath(dir.get(), name, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, &next);
    if (err == ENOENT && made != nullptr) {
      if (::mkdirat(dir.get(), name.c_str(), 0777) == 0) {
        Fd parent(::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0));
        if (!parent) return errno;
        made->push_back(Location{std::move(parent), name, walked});
      } else if (errno != EEXIST) {
        return errno;
      }
      err = OpenBeneath(dir.get(), name, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, &next);
    }
    if (err != 0) return err;
    // A carve-out reached under another name (a command renamed a parent since the policy
    // was built) is as read-only as under its own.
    struct stat st;
    if (::fstat(next.get(), &st) != 0) return errno;
    for (const auto& [dev, ino] : policy_.carveout_ids) {
      if (st.st_dev == dev && st.st_ino == ino) return EROFS;
    }
    dir = std::move(next);
  }
  out->dir = std::move(dir);
  out->name = std::string(parts.back());
  out->path = path;
  return 0;
}

int ConfinedFs::Read(const Location& at, FileRead* out) const {
  *out = FileRead{};
  struct stat st {};
  if (::fstatat(at.dir.get(), at.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? 0 : errno;
  }
  auto refuse = [&](const struct stat& s) {
    out->type = s.st_mode & S_IFMT;
    if (S_ISDIR(s.st_mode)) return EISDIR;
    if (S_ISLNK(s.st_mode)) return ELOOP;  // appeared after the path was resolved
    return EINVAL;
  };
  // Refused before opening: opening a FIFO blocks, a device may act on open.
  if (!S_ISREG(st.st_mode)) return refuse(st);
  Fd fd;
  int err =
      OpenBeneath(at.dir.get(), at.name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0, &fd);
  if (err == ENOENT) return 0;
  if (err != 0) return err;
  if (::fstat(fd.get(), &st) != 0) return errno;
  if (!S_ISREG(st.st_mode)) return refuse(st);  // swapped between the stat and the open
  out->mode = st.st_mode & 07777;
  std::string data;
  data.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  for (;;) {
    if (got == data.size()) data.resize(std::max<size_t>(4096, data.size() * 2));
    ssize_t n = ::read(fd.get(), data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  out->content = std::move(data);
  return 0;
}

int ConfinedFs::Replace(const Location& at, const std::string& content, mode_t mode,
                        bool keep_mode) const {
  return ReplaceAt(at.dir.get(), at.name, content, keep_mode ? mode : 0666, keep_mode);
}

int ConfinedFs::Unlink(const Location& at) const {
  return ::unlinkat(at.dir.get(), at.name.c_str(), 0) == 0 ? 0 : errno;
}

int ConfinedFs::RemoveDir(const Location& at) const {
  return ::unlinkat(at.dir.get(), at.name.c_str(), AT_REMOVEDIR) == 0 ? 0 : errno;
}

int ConfinedFs::SyncDir(const Location& at) const {
  return ::fsync(at.dir.get()) == 0 ? 0 : errno;
}

}  // namespace ae::sandbox
