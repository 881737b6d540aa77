#include "base/remove_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <string>
#include <vector>

#include "base/fd.h"

namespace ae {
namespace {

// Deeper than this, a subdirectory is moved up into the top directory instead of being
// entered: each level holds a descriptor while its entries are removed.
constexpr int kMaxDepth = 64;

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// A directory whose mode keeps its owner out (chmod 0): opened by path (O_PATH, no symlink
// followed) and given its owner's rights back through that descriptor.
bool OpenUp(int parent, const std::string& name) {
  Fd path(::openat(parent, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!path || ::fstat(path.get(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  const std::string link = "/proc/self/fd/" + std::to_string(path.get());
  return ::chmod(link.c_str(), (st.st_mode & 07777) | 0700) == 0;
}

// The directory `name` in `parent`, opened without following a link, with its owner's rights
// (which a command may have taken away) restored; -1 and errno otherwise.
Fd OpenOwnDir(int parent, const std::string& name, struct stat* st) {
  Fd dir(::openat(parent, name.c_str(), kDirFlags));
  if (!dir && errno == EACCES && OpenUp(parent, name))
    dir.reset(::openat(parent, name.c_str(), kDirFlags));
  if (!dir || ::fstat(dir.get(), st) != 0) return {};
  if ((st->st_mode & 0700) != 0700 && ::fchmod(dir.get(), (st->st_mode & 07777) | 0700) != 0) {
    return {};
  }
  return dir;
}

// The entries of the directory `fd`, read whole before any is removed.
std::vector<std::string> Names(int fd) {
  std::vector<std::string> names;
  const int copy = ::dup(fd);
  if (copy < 0) return names;
  DIR* d = ::fdopendir(copy);
  if (d == nullptr) {
    ::close(copy);
    return names;
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

class TreeRemover {
 public:
  TreeRemover(int top_fd, dev_t dev) : top_fd_(top_fd), dev_(dev) {}

  // Removes every entry of the directory `dir`, `depth` levels below the top.
  void Empty(int dir, int depth) {
    for (const std::string& entry : Names(dir)) {
      if (::unlinkat(dir, entry.c_str(), 0) == 0 || errno == ENOENT) continue;
      if (errno != EISDIR && errno != EPERM) {
        Note(errno);
        continue;
      }
      if (depth + 1 >= kMaxDepth) {
        // Moved into the top under a name of ours, and removed from there.
        const std::string moved = ".agentexec-remove-" + std::to_string(next_++);
        if (::renameat(dir, entry.c_str(), top_fd_, moved.c_str()) == 0) {
          pending_.push_back(moved);
          continue;
        }
      }
      RemoveDir(dir, entry, depth + 1);
    }
  }

  // What was moved up, until nothing is left.
  void RemovePending() {
    while (!pending_.empty()) {
      const std::string name = pending_.front();
      pending_.pop_front();
      RemoveDir(top_fd_, name, 1);
    }
  }

  void Note(int err) {
    if (error_ == 0) error_ = err;
  }
  int error() const { return error_; }

 private:
  void RemoveDir(int parent, const std::string& name, int depth) {
    struct stat st {};
    Fd dir = OpenOwnDir(parent, name, &st);
    if (!dir) return Note(errno == ENOENT ? 0 : errno);
    if (st.st_dev != dev_) return Note(EXDEV);  // a mount point: not ours to empty
    Empty(dir.get(), depth);
    dir.reset();
    if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) Note(errno);
  }

  int top_fd_;
  dev_t dev_;
  std::deque<std::string> pending_;
  unsigned long next_ = 0;
  int error_ = 0;
};

}  // namespace

int RemoveTreeAt(int dirfd, const std::string& name) {
  if (::unlinkat(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return 0;
  if (errno != EISDIR && errno != EPERM) return errno;
  struct stat st {};
  Fd top = OpenOwnDir(dirfd, name, &st);
  if (!top) return errno == ENOENT ? 0 : errno;
  TreeRemover remover(top.get(), st.st_dev);
  remover.Empty(top.get(), 0);
  remover.RemovePending();
  top.reset();
  if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) remover.Note(errno);
  return remover.error();
}

}  // namespace ae
