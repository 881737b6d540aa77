#include "sandbox/nested_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <iterator>
#include <memory>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>
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

// A walk on several threads first splits the tree, breadth first, into this many subtrees a
// thread (taken in turn, so that a large one does not leave the others idle for long), and
// uses at most kMaxWalkThreads: past that, the file system's own locks are the limit.
constexpr size_t kSubtreesPerThread = 16;
constexpr unsigned kMaxWalkThreads = 4;
// The descriptor limit (RLIMIT_NOFILE) below which the walk keeps to one thread (WalkThreads).
constexpr rlim_t kDescriptorsForThreads = 1024;

// Whether an open just failed for want of descriptors or memory, not because of what the tree
// holds: the walk has then not seen the whole tree, and says so (a subtree skipped for that
// would leave its repositories writable without a word).
bool OutOfResources() {
  return errno == EMFILE || errno == ENFILE || errno == ENOMEM;
}

struct Frame {
  Fd fd;             // invalid while closed to spare descriptors (kMaxOpenFrames)
  std::string name;  // in the parent frame's directory; empty for the root
  std::string todo;  // the names of the subdirectories still to walk, each ending in '\0'
  size_t next = 0;   // offset of the next name in `todo`
  dev_t dev = 0;     // identity of the directory, recorded when its descriptor is closed
  ino_t ino = 0;
  bool toward_skip = false;  // a directory of the walk's `skip` lies below this one
};

// The number of subdirectories of the directory `fd` when its file system keeps st_nlink as
// 2 + that number; -1 when it may not (btrfs and overlayfs report 1 or other counts, ext4
// reports 1 past 65,000 subdirectories).
long SubdirectoryCount(int fd) {
  if (!KeepsSubdirectoryCount(fd)) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_nlink < 2) return -1;
  return static_cast<long>(st.st_nlink - 2);
}

// Whether the directory `name` in `dir_fd`, which could not be opened or looked into, is one
// of ours whose mode keeps us out (a directory another user keeps from us holds nothing of
// ours a command could reach either).
bool OursButClosed(int dir_fd, const char* name, int err) {
  if (err != EACCES) return false;
  struct stat st {};
  return ::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
         st.st_uid == ::geteuid();
}

// Whether `dir_fd`'s directory, which the walk could open and list, is one of ours whose mode
// keeps us from looking up `name` in it (chmod 600: readable, not searchable), which an open
// of `name` just failed with `err` for: nothing below it can be seen.
bool ListableButClosed(int dir_fd, const char* name, int err) {
  if (err != EACCES) return false;
  struct stat st {};
  if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != EACCES) return false;
  return ::fstat(dir_fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
}

// The directory `path` (absolute, not the root "/") is in.
std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

// What the parts of one walk share: the root, the directories not to enter, the visitor, and
// the root's file system.
struct WalkShared {
  const std::string& root;
  const std::vector<std::string>& skip;
  const NestedVisitor& visit;
  dev_t root_dev = 0;  // whether the root's file system keeps st_nlink (Walk::IsLeaf)
  bool root_keeps_nlink = false;
};

// After an open of the subdirectory `name` of `dir_fd` (at `path`) failed: reports what the
// walk cannot see there as unsearchable (OursButClosed: the subdirectory; ListableButClosed:
// `dir_fd`'s directory). errno stays the open's, for OutOfResources.
void ReportIfClosed(const WalkShared& shared, int dir_fd, const std::string& name,
                    const std::string& path) {
  const int err = errno;
  if (OursButClosed(dir_fd, name.c_str(), err)) {
    shared.visit(NestedHit::kUnsearchable, path);
  } else if (ListableButClosed(dir_fd, name.c_str(), err)) {
    shared.visit(NestedHit::kUnsearchable, ParentOf(path));
  }
  errno = err;
}

// A directory still to walk, with the tree below it, opened by name from its parent when its
// turn comes. The subtrees of one parent share its descriptor: names wait in the queue, not
// descriptors, so a directory of 10,000 subdirectories costs one.
struct Subtree {
  std::shared_ptr<const Fd> parent;
  std::string name;
  std::string path;
  bool toward_skip = false;  // a directory of the walk's `skip` lies below this one
};

// The walk below one directory, `base`: the root, or a subtree of it.
class Walk {
 public:
  Walk(const WalkShared& shared, std::string base, std::vector<char>& buffer)
      : shared_(shared), base_(std::move(base)), buffer_(buffer) {}

  // Walks the whole tree below `fd` (base), depth first. False when `stop` ended it first.
  bool Run(Fd fd, bool toward_skip, const std::function<bool()>& stop) {
    Frame first;
    first.fd = std::move(fd);
    first.toward_skip = toward_skip;
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
        if (OutOfResources()) return false;
        stack_.pop_back();  // moved or removed by someone else since it was listed
        continue;
      }
      Frame child;
      child.name = name;
      if (!Enter(top.fd.get(), top.toward_skip, child.name, &child.toward_skip)) continue;
      child.fd = OpenSubdirectory(top.fd.get(), child.name);
      if (!child.fd && OutOfResources()) return false;
      if (!child.fd) continue;
      List(child.fd.get(), &child.name, &child.todo);
      if (child.todo.empty()) continue;
      stack_.push_back(std::move(child));
      if (stack_.size() > kMaxOpenFrames) Close(stack_[stack_.size() - 1 - kMaxOpenFrames]);
    }
    return true;
  }

  // Opens the subdirectory `name` of the top frame's directory `dir_fd` (base when the stack is
  // empty); invalid when it is gone, a symlink by now, or closed to us (reported, see
  // OursButClosed).
  Fd OpenSubdirectory(int dir_fd, const std::string& name) {
    Fd fd(::openat(dir_fd, name.c_str(), kOpenFlags));
    if (!fd) ReportIfClosed(shared_, dir_fd, name, PathOf(name));
    return fd;
  }

  // Lists `fd` (base) alone: reports what it holds and queues its subdirectories in `out`.
  // False when `stop` said yes first, asked before each subdirectory as Run does (a directory
  // of many thousands would otherwise hold up a SIGINT).
  bool Expand(Fd fd, bool toward_skip, std::deque<Subtree>* out,
              const std::function<bool()>& stop) {
    Frame first;
    List(fd.get(), nullptr, &first.todo);
    stack_.push_back(std::move(first));  // PathOf's base
    auto parent = std::make_shared<const Fd>(std::move(fd));
    const std::string& todo = stack_.back().todo;
    for (size_t at = 0; at < todo.size();) {
      Subtree child;
      child.name = todo.c_str() + at;
      at += child.name.size() + 1;
      if (stop()) return false;
      if (!Enter(parent->get(), toward_skip, child.name, &child.toward_skip)) continue;
      child.path = PathOf(child.name);
      child.parent = parent;
      out->push_back(std::move(child));
    }
    stack_.clear();
    return true;
  }

 private:
  // Whether to open and walk the subdirectory `name` of the top frame's directory `dir_fd`:
  // not one of the walk's `skip`, nor a leaf (its `.git` or `.agentexec` are reported here).
  // `*toward_skip`: a skipped directory lies below it.
  bool Enter(int dir_fd, bool dir_toward_skip, const std::string& name, bool* toward_skip) {
    *toward_skip = false;
    // Only on the way to a skipped directory is a path made, and compared.
    if (dir_toward_skip) {
      const std::string path = PathOf(name);
      for (const std::string& other : shared_.skip) {
        if (other == path) return false;
        if (other.size() > path.size() && other.compare(0, path.size(), path) == 0 &&
            other[path.size()] == '/') {
          *toward_skip = true;
        }
      }
    }
    if (!*toward_skip && IsLeaf(dir_fd, name)) {
      // No subdirectory to walk: a `.git` or `.agentexec` in it can only be a file or a
      // symlink (a directory would count in st_nlink), found by name without listing.
      ReportLeaf(dir_fd, name);
      return false;
    }
    return true;
  }

  // Whether the directory `name` in `dir_fd` has no subdirectories, as its st_nlink of 2 says
  // on the file systems that keep it (SubdirectoryCount); false when it may have some or
  // cannot be told. One fstatat instead of an open, two getdents64 and a close: most
  // directories of a large tree (node_modules, build output) are leaves.
  bool IsLeaf(int dir_fd, const std::string& name) {
    // A file system that does not keep the count (btrfs, overlayfs) pays no fstatat for it.
    if (!shared_.root_keeps_nlink) return false;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
    // Only on the root's file system, whose kind WalkNested asked once: a mount point below
    // the root may hold another kind, whose directories are then listed.
    return S_ISDIR(st.st_mode) && st.st_nlink == 2 && st.st_dev == shared_.root_dev;
  }

  void ReportLeaf(int dir_fd, const std::string& name) {
    struct stat st {};
    if (::fstatat(dir_fd, (name + "/.git").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      shared_.visit(NestedHit::kGit, PathOf(name));
    } else if (OursButClosed(dir_fd, name.c_str(), errno)) {
      shared_.visit(NestedHit::kUnsearchable, PathOf(name));  // not even searchable
      return;
    }
    if (::fstatat(dir_fd, (name + "/.agentexec").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      shared_.visit(NestedHit::kAgentexec, PathOf(name) + "/.agentexec");
    }
  }

  // The path of the directory `name` inside the top frame's.
  std::string PathOf(const std::string& name) const {
    std::string path = base_;
    auto add = [&](const std::string& part) {
      if (path.back() != '/') path += '/';
      path += part;
    };
    for (size_t i = 1; i < stack_.size(); ++i) add(stack_[i].name);
    add(name);
    return path;
  }

  // Reads the directory `fd` (`name` inside the top frame's; the base when null): reports its
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
          if (name == nullptr && base_ == shared_.root) continue;
          const std::string dir = name == nullptr ? base_ : PathOf(*name);
          if (entry_name == ".git") {
            shared_.visit(NestedHit::kGit, dir);
          } else {
            shared_.visit(NestedHit::kAgentexec, dir + "/.agentexec");
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
    if (::fstat(at.get(), &st) != 0 || st.st_dev != top.dev || st.st_ino != top.ino) {
      errno = ESTALE;  // another directory by now, not OutOfResources
      return false;
    }
    top.fd = std::move(at);
    return true;
  }

  const WalkShared& shared_;
  const std::string base_;
  std::vector<char>& buffer_;
  std::vector<Frame> stack_;
};

}  // namespace

bool KeepsSubdirectoryCount(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3
    case TMPFS_MAGIC:
    case XFS_SUPER_MAGIC:
      return true;
    default:
      return false;
  }
}

unsigned WalkThreads() {
  // Several threads hold up to about 200 descriptors (kSubtreesPerThread parents queued, and
  // kMaxOpenFrames a thread) where one holds kMaxOpenFrames: under a low descriptor limit the
  // walk keeps to one, rather than run out and end incomplete.
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur < kDescriptorsForThreads) return 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cpus = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  return static_cast<unsigned>(std::clamp(cpus, 1, static_cast<int>(kMaxWalkThreads)));
}

namespace {

Fd OpenSubtree(const WalkShared& shared, const Subtree& subtree) {
  Fd dir(::openat(subtree.parent->get(), subtree.name.c_str(), kOpenFlags));
  if (!dir) ReportIfClosed(shared, subtree.parent->get(), subtree.name, subtree.path);
  return dir;
}

// Breadth first from the root until there are subtrees enough to share among `threads`.
// False when `stop` ended it first or descriptors ran out.
bool ShareOut(const WalkShared& shared, Fd root_fd, bool toward_skip, unsigned threads,
              const std::function<bool()>& stop, std::vector<char>& buffer,
              std::vector<Subtree>* subtrees) {
  std::deque<Subtree> queue;
  if (!Walk(shared, shared.root, buffer).Expand(std::move(root_fd), toward_skip, &queue, stop)) {
    return false;
  }
  while (!queue.empty() && queue.size() < threads * kSubtreesPerThread) {
    if (stop()) return false;
    Subtree next = std::move(queue.front());
    queue.pop_front();
    Fd dir = OpenSubtree(shared, next);
    if (!dir && OutOfResources()) return false;
    if (!dir) continue;
    if (!Walk(shared, next.path, buffer).Expand(std::move(dir), next.toward_skip, &queue, stop)) {
      return false;
    }
  }
  subtrees->assign(std::make_move_iterator(queue.begin()), std::make_move_iterator(queue.end()));
  return true;
}

// Each of `threads` threads (this one among them) takes the next subtree not yet taken and
// walks it whole, depth first.
bool WalkSubtrees(const WalkShared& shared, std::vector<Subtree>& subtrees, unsigned threads,
                  const std::function<bool()>& stop, std::vector<char>& buffer) {
  std::atomic<size_t> taken{0};
  std::atomic<bool> stopped{false};
  auto work = [&](std::vector<char>& own_buffer) {
    for (;;) {
      const size_t i = taken.fetch_add(1);
      if (i >= subtrees.size() || stopped.load()) return;
      Subtree& subtree = subtrees[i];
      Fd dir = OpenSubtree(shared, subtree);
      const bool out_of_resources = !dir && OutOfResources();
      subtree.parent.reset();
      if (out_of_resources) {
        stopped.store(true);
        return;
      }
      if (!dir) continue;
      if (!Walk(shared, subtree.path, own_buffer).Run(std::move(dir), subtree.toward_skip, stop)) {
        stopped.store(true);
        return;
      }
    }
  };
  std::vector<std::thread> helpers;
  std::vector<std::vector<char>> buffers;
  buffers.reserve(threads);
  for (unsigned i = 1; i < threads && i < subtrees.size(); ++i) {
    buffers.emplace_back(kBufferBytes);
    try {
      helpers.emplace_back(work, std::ref(buffers.back()));
    } catch (const std::system_error&) {
      break;  // no thread to be had: this one walks what is left
    }
  }
  work(buffer);
  for (std::thread& helper : helpers) helper.join();
  return !stopped.load();
}

}  // namespace

bool WalkNested(const std::string& root, const std::vector<std::string>& skip,
                const std::function<bool()>& stop, const NestedVisitor& visit, unsigned threads) {
  if (stop()) return false;
  Fd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (OutOfResources()) return false;
    // Nothing there to walk, or a root a command closed to us: then all of it is unknown.
    if (OursButClosed(AT_FDCWD, root.c_str(), errno)) visit(NestedHit::kUnsearchable, root);
    return true;
  }
  std::mutex visit_mutex;
  const NestedVisitor serialized = [&](NestedHit hit, const std::string& dir) {
    const std::lock_guard<std::mutex> lock(visit_mutex);
    visit(hit, dir);
  };
  WalkShared shared{root, skip, threads > 1 ? serialized : visit};
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0) {
    shared.root_dev = st.st_dev;
    shared.root_keeps_nlink = KeepsSubdirectoryCount(fd.get());
  }
  const bool toward_skip = !skip.empty();
  std::vector<char> buffer(kBufferBytes);
  if (threads <= 1) return Walk(shared, root, buffer).Run(std::move(fd), toward_skip, stop);
  std::vector<Subtree> subtrees;
  if (!ShareOut(shared, std::move(fd), toward_skip, threads, stop, buffer, &subtrees)) {
    return false;
  }
  return WalkSubtrees(shared, subtrees, threads, stop, buffer);
}

}  // namespace ae::sandbox
