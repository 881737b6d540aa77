#include "sandbox/nested_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "base/fd.h"

namespace ae::sandbox {
namespace {

// One buffer for the whole walk: most directories are read by one getdents64 and the empty
// one that says the end was reached.
constexpr size_t kBufferBytes = size_t{64} * 1024;

// Descriptors the walk holds: the directories between the root and where it is. An ancestor
// further up is closed and opened again by name when the walk comes back to it, so a tree of
// any depth cannot use up the descriptors the session's sockets and pipes need.
constexpr size_t kMaxOpenFrames = 32;

constexpr int kOpenFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

struct Frame {
  Fd fd;             // invalid while closed to spare descriptors (kMaxOpenFrames)
  std::string name;  // in the parent frame's directory; empty for the root
  std::string todo;  // the names of the subdirectories still to walk, each ending in '\0'
  size_t next = 0;   // offset of the next name in `todo`
  dev_t dev = 0;     // identity of the directory, recorded when its descriptor is closed
  ino_t ino = 0;
  bool toward_skip = false;  // a directory of the walk\'s `skip` lies below this one
};

// The number of subdirectories of the directory `fd` when its file system keeps st_nlink as
// 2 + that number; -1 when it may not (btrfs and overlayfs report 1 or other counts, ext4
// reports 1 past 65,000 subdirectories).
long SubdirectoryCount(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return -1;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3
    case TMPFS_MAGIC:
    case XFS_SUPER_MAGIC:
      break;
    default:
      return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_nlink < 2) return -1;
  return static_cast<long>(st.st_nlink - 2);
}

class Walk {
 public:
  Walk(const std::string& root, const std::vector<std::string>& skip, const NestedVisitor& visit)
      : root_(root), skip_(skip), visit_(visit), buffer_(kBufferBytes) {}

  bool Run(const std::function<bool()>& stop) {
    if (stop()) return false;
    Frame first;
    first.fd.reset(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!first.fd) return true;  // nothing there to walk
    first.toward_skip = !skip_.empty();
    List(first.fd.get(), nullptr, &first.todo);
    stack_.push_back(std::move(first));
    while (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.next >= top.todo.size()) {
        stack_.pop_back();
        continue;
      }
      const std::string_view name(top.todo.c_str() + top.next);
      top.next += name.size() + 1;
      if (stop()) return false;
      if (!top.fd && !Reopen()) {
        stack_.pop_back();  // moved or removed by someone else since it was listed
        continue;
      }
      Frame child;
      child.name = name;
      // Only on the way to a skipped directory is a path made, and compared.
      if (top.toward_skip) {
        const std::string path = PathOf(child.name);
        bool skipped = false;
        for (const std::string& other : skip_) {
          if (other == path) skipped = true;
          if (other.size() > path.size() && other.compare(0, path.size(), path) == 0 &&
              other[path.size()] == '/') {
            child.toward_skip = true;
          }
        }
        if (skipped) continue;
      }
      child.fd.reset(::openat(top.fd.get(), child.name.c_str(), kOpenFlags));
      if (!child.fd) continue;  // gone, a symlink by now, or not ours to read
      List(child.fd.get(), &child.name, &child.todo);
      if (child.todo.empty()) continue;
      stack_.push_back(std::move(child));
      if (stack_.size() > kMaxOpenFrames) Close(stack_[stack_.size() - 1 - kMaxOpenFrames]);
    }
    return true;
  }

 private:
  // The path of the directory `name` inside the top frame's.
  std::string PathOf(const std::string& name) const {
    std::string path = root_;
    auto add = [&](const std::string& part) {
      if (path.back() != '/') path += '/';
      path += part;
    };
    for (size_t i = 1; i < stack_.size(); ++i) add(stack_[i].name);
    add(name);
    return path;
  }

  // Reads the directory `fd` (`name` inside the top frame's; the root when null): reports its
  // `.git` and `.agentexec` and appends its other subdirectories to `todo`.
  void List(int fd, const std::string* name, std::string* todo) {
    long subdirs_left = -2;  // -2: not asked yet; -1: unknown
    for (;;) {
      const ssize_t n = ::getdents64(fd, buffer_.data(), buffer_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the end, or an error: what was read is walked
      for (size_t at = 0; at < static_cast<size_t>(n);) {
        const auto* entry = reinterpret_cast<const struct dirent64*>(buffer_.data() + at);
        at += entry->d_reclen;
        const std::string_view entry_name(entry->d_name);
        if (entry_name == "." || entry_name == "..") continue;
        if (entry_name == ".git" || entry_name == ".agentexec") {
          // Never entered. The root's own are the policy's already.
          if (name == nullptr) continue;
          if (entry_name == ".git") {
            visit_(NestedHit::kGit, PathOf(*name));
          } else {
            visit_(NestedHit::kAgentexec, PathOf(*name) + "/.agentexec");
          }
          continue;
        }
        unsigned char type = entry->d_type;
        if (type == DT_UNKNOWN) {
          // Some file systems (xfs without ftype) do not say: ask, unless st_nlink says every
          // subdirectory was seen already.
          if (subdirs_left == -2) subdirs_left = SubdirectoryCount(fd);
          if (subdirs_left == 0) continue;
          struct stat st {};
          if (::fstatat(fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
          if (!S_ISDIR(st.st_mode)) continue;
          type = DT_DIR;
          if (subdirs_left > 0) --subdirs_left;
        }
        if (type != DT_DIR) continue;
        todo->append(entry_name.data(), entry_name.size());
        todo->push_back('\0');
      }
    }
  }

  void Close(Frame& frame) {
    if (!frame.fd || &frame == &stack_.front()) return;  // the root stays open
    struct stat st {};
    if (::fstat(frame.fd.get(), &st) == 0) {
      frame.dev = st.st_dev;
      frame.ino = st.st_ino;
    }
    frame.fd.reset();
  }

  // Opens the top frame's directory again from the nearest open ancestor, by name, and checks
  // it is the same directory it was.
  bool Reopen() {
    size_t open = stack_.size() - 1;
    while (!stack_[open].fd) --open;  // the root is always open
    Fd at;
    int at_fd = stack_[open].fd.get();
    for (size_t i = open + 1; i < stack_.size(); ++i) {
      Fd next(::openat(at_fd, stack_[i].name.c_str(), kOpenFlags));
      if (!next) return false;
      at = std::move(next);
      at_fd = at.get();
    }
    struct stat st {};
    Frame& top = stack_.back();
    if (::fstat(at.get(), &st) != 0 || st.st_dev != top.dev || st.st_ino != top.ino) return false;
    top.fd = std::move(at);
    return true;
  }

  const std::string& root_;
  const std::vector<std::string>& skip_;
  const NestedVisitor& visit_;
  std::vector<char> buffer_;
  std::vector<Frame> stack_;
};

}  // namespace

bool WalkNested(const std::string& root, const std::vector<std::string>& skip,
                const std::function<bool()>& stop, const NestedVisitor& visit) {
  return Walk(root, skip, visit).Run(stop);
}

}  // namespace ae::sandbox
