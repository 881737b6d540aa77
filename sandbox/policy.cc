#include "sandbox/policy.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <unordered_set>

#include "base/fd.h"
#include "base/read_file.h"
#include "sandbox/confined_fs.h"
#include "sandbox/nested_walk.h"
#include "sandbox/paths.h"

namespace ae::sandbox {
namespace {

void AddUnique(std::vector<std::string>& list, std::string value) {
  for (const std::string& existing : list) {
    if (existing == value) return;
  }
  list.push_back(std::move(value));
}

// A list of carve-outs without repeats, in the order found: a /tmp full of repositories
// makes it long, so membership is not a linear search.
class CarveoutList {
 public:
  explicit CarveoutList(std::vector<std::string>* list)
      : list_(list), seen_(list->begin(), list->end()) {}
  // False when it was listed already.
  bool Add(std::string path) {
    if (!seen_.insert(path).second) return false;
    list_->push_back(std::move(path));
    return true;
  }

 private:
  std::vector<std::string>* list_;
  std::unordered_set<std::string> seen_;
};

// realpath(3) of an existing directory, or the errno text.
bool Canonical(const std::string& path, std::string* out, std::string* why) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) {
    *why = std::strerror(errno);
    return false;
  }
  *out = resolved;
  std::free(resolved);
  struct stat st;
  if (::stat(out->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *why = "Not a directory";
    return false;
  }
  return true;
}

// The workspace's `.git` file and the `commondir` it leads to are the command's to write: only
// a regular file on a real file system is read (a FIFO there would block every later command's
// set-up), and only beneath its directory (base/beneath.h): no symlink leads the read out.
std::string ReadFirstLine(const std::string& dir, const std::string& name) {
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return {};
  Result<std::string> first = ReadRegularFirstLineBeneath(dir_fd.get(), name, 4096);
  if (!first.ok()) return {};
  std::string line = std::move(*first);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// A path and, when symlinks make it land elsewhere, where it lands: both must stay read-only.
void AddCarveout(CarveoutList& carveouts, const std::string& path) {
  carveouts.Add(path);
  carveouts.Add(ResolvePath(path));
}

// `<root>/.git`: a directory, or in a linked worktree a file "gitdir: <path>" naming the
// worktree's git dir, whose "commondir" names the main repository's git dir. Git writes hooks,
// config and refs there, so all of them stay read-only.
void AddGitCarveouts(CarveoutList& carveouts, const std::string& root) {
  const std::string dot_git = JoinPath(root, ".git");
  AddCarveout(carveouts, dot_git);
  std::string line = ReadFirstLine(root, ".git");  // empty for a directory
  constexpr std::string_view kPrefix = "gitdir:";
  if (line.compare(0, kPrefix.size(), kPrefix) != 0) return;
  std::string target = line.substr(kPrefix.size());
  target.erase(0, target.find_first_not_of(' '));
  if (target.empty()) return;
  const std::string gitdir = ResolvePath(JoinPath(root, target));
  AddCarveout(carveouts, gitdir);
  std::string common = ReadFirstLine(gitdir, "commondir");
  if (!common.empty()) AddCarveout(carveouts, ResolvePath(JoinPath(gitdir, common)));
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// `dir/.git` and `dir/.agentexec` when they exist.
void AddExistingCarveouts(CarveoutList& carveouts, const std::string& dir) {
  if (Exists(JoinPath(dir, ".git"))) AddGitCarveouts(carveouts, dir);
  if (Exists(JoinPath(dir, ".agentexec"))) AddCarveout(carveouts, JoinPath(dir, ".agentexec"));
}

// Repositories git would find from `dir`: its own and every parent directory's (git walks up
// to the first `.git`; protecting every one on the way is simpler and covers a cwd that moves).
void AddParentRepositories(CarveoutList& carveouts, const std::string& dir) {
  for (std::string at = dir;; at = NormalizePath(at + "/..")) {
    AddExistingCarveouts(carveouts, at);
    if (at == "/") break;
  }
}

// Nested repositories, submodules and worktrees inside the writable roots: every `.git`
// (directory or gitfile) and `.agentexec` below one, and the git dirs gitfiles name (the
// roots' own are the base policy's). False when `stop` ended the walk first. The shared
// temporary roots (/tmp, $TMPDIR) are searched to the end like the others: they were once
// searched only as far as a bound, without a warning (a busy machine's /tmp exceeds any
// bound, and a warning on every run teaches users to ignore warnings), which left a
// repository past it writable without a word. The walk runs off a session's start-up path
// and costs a few system calls a directory, so it is done whole instead.
bool SearchNested(const std::vector<std::string>& roots, const std::function<bool()>& stop,
                  std::vector<std::string>* found) {
  CarveoutList carveouts(found);
  auto visit = [&](NestedHit hit, const std::string& path) {
    if (hit == NestedHit::kGit) {
      AddGitCarveouts(carveouts, path);
      return;
    }
    if (hit == NestedHit::kUnsearchable) {
      // Kept read-only whole, unless another root is below it (a workspace in a directory of
      // /tmp), which must stay writable: that root is walked on its own.
      for (const std::string& root : roots) {
        if (root != path && IsUnder(root, path)) return;
      }
    }
    AddCarveout(carveouts, path);
  };
  // Each directory once: a root inside another (a workspace under /tmp) is walked on its own,
  // not again as part of the outer one (which may not reach it: a directory on the way may
  // be searchable but not readable to us).
  const unsigned threads = WalkThreads();
  for (const std::string& root : roots) {
    std::vector<std::string> inner;
    for (const std::string& other : roots) {
      if (other != root && IsUnder(other, root)) inner.push_back(other);
    }
    if (!WalkNested(root, inner, stop, visit, threads)) return false;
  }
  // The same carve-outs in the same order whatever order the threads found them in.
  std::sort(found->begin(), found->end());
  return true;
}

// Why a search that nothing stopped did not see every directory (WalkNested).
constexpr const char* kSearchOutOfResources =
    "sandbox: the search for nested repositories ran out of descriptors or memory before it "
    "was complete; raise the open-file limit (ulimit -n) or free memory, and run again";

// Adds `found` to the policy's carve-outs, with the identity of each that exists.
void AddNested(Policy* policy, const std::vector<std::string>& found) {
  CarveoutList carveouts(&policy->read_only_carveouts);
  for (const std::string& path : found) {
    if (!carveouts.Add(path)) continue;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) policy->carveout_ids.emplace_back(st.st_dev, st.st_ino);
  }
}

// The writable root `path` lies strictly below (the innermost), or "".
std::string RootAbove(const Policy& policy, const std::string& path) {
  std::string best;
  for (const std::string& root : policy.writable_roots) {
    if (root != path && IsUnder(path, root) && root.size() > best.size()) best = root;
  }
  return best;
}

// A protected path: read-only wherever it lies inside a writable root, whether or not it
// exists; missing, it is made empty before the first command (a placeholder), and every
// directory between its root and it is pinned. Symlinks are resolved as for any carve-out.
void Protect(Policy* policy, CarveoutList& carveouts, const std::string& given, bool directory,
             bool home) {
  const std::string normal = NormalizePath(given);
  for (const std::string& path : {normal, ResolvePath(normal)}) {
    const std::string root = RootAbove(*policy, path);
    if (root.empty()) continue;
    AddCarveout(carveouts, normal);
    for (size_t slash = path.find('/', root.size() + 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      AddUnique(policy->pinned, path.substr(0, slash));
    }
    if (!Exists(path)) {
      bool listed = false;
      for (const Policy::Placeholder& p : policy->placeholders) listed = listed || p.path == path;
      if (!listed) policy->placeholders.push_back({path, directory, home});
    }
    return;
  }
}

// `.agentexec/` and `.codex/` at the top of every root, the homes (agentexec's and codex's)
// under whatever name, and sandbox_workspace_write.protected_paths.
void AddProtectedPaths(const Settings& settings, Policy* policy, CarveoutList& carveouts) {
  std::vector<std::string> entries = {".agentexec/", ".codex/"};
  entries.insert(entries.end(), settings.protected_paths.begin(), settings.protected_paths.end());
  const std::vector<std::string> roots = policy->writable_roots;
  for (const std::string& entry : entries) {
    if (entry.empty() || entry == "/") continue;
    const bool directory = entry.back() == '/';
    const std::string path = directory ? entry.substr(0, entry.size() - 1) : entry;
    if (path.front() == '/') {
      // A home's dotfile (~/.bashrc, ~/.gitconfig): its placeholder is an empty file, which
      // the shell or git that reads it takes as it is.
      Protect(policy, carveouts, path, directory, false);
      continue;
    }
    // At the top of a root a missing file's placeholder is an empty directory: no file can be
    // made at that name, and git does not see it (an empty `.envrc` file would be in a commit
    // the agent makes).
    for (const std::string& root : roots) {
      // The run's own /tmp is gone when the run ends: nothing in it reaches another run.
      if (root == policy->private_tmp) continue;
      Protect(policy, carveouts, JoinPath(root, path), true, false);
    }
  }
  // A home that is a root itself, or holds one, was given as writable by the user.
  for (const std::string& dir : settings.read_only_dirs) {
    if (dir.empty() || dir.front() != '/') continue;
    Protect(policy, carveouts, dir, true, true);
  }
}

}  // namespace

bool WantsPrivateTmp(const Settings& settings) {
  return settings.mode == Mode::kWorkspaceWrite && !settings.shared_tmp &&
         !settings.exclude_slash_tmp;
}

bool Policy::CanWrite(std::string_view path) const {
  // One rule for every write check: the one agentexec's own writes are held to.
  std::string resolved;
  return ConfinedFs(*this).Target(std::string(path), &resolved) == 0;
}

namespace {

// Optional roots that do not exist are skipped with a warning, never made up.
void AddOptionalRoot(const std::string& cwd, const std::string& given, const std::string& what,
                     Policy* policy) {
  std::string canonical, reason;
  if (Canonical(JoinPath(cwd, given), &canonical, &reason)) {
    AddUnique(policy->writable_roots, canonical);
  } else {
    policy->warnings.push_back(
        fmt::format("sandbox: {} {} is not writable in this run: {}", what, given, reason));
  }
}

// The run's own /tmp when it has one; else the host's /tmp and $TMPDIR unless excluded.
Status AddTmpRoots(const Settings& settings, const std::string& cwd, Policy* policy) {
  if (!settings.private_tmp.empty()) {
    std::string own, reason;
    if (!Canonical(settings.private_tmp, &own, &reason)) {
      return MakeError(fmt::format("sandbox: cannot use the run's private /tmp {}: {}",
                                   settings.private_tmp, reason));
    }
    AddUnique(policy->writable_roots, own);
    policy->private_tmp = own;
    return {};
  }
  if (!settings.exclude_slash_tmp) {
    std::string tmp, reason;
    if (Canonical("/tmp", &tmp, &reason)) AddUnique(policy->writable_roots, tmp);
  }
  const char* tmpdir = std::getenv("TMPDIR");
  if (settings.exclude_tmpdir_env_var || tmpdir == nullptr || *tmpdir == '\0') return {};
  if (tmpdir[0] == '/') {
    AddOptionalRoot(cwd, tmpdir, "$TMPDIR", policy);
  } else {
    policy->warnings.push_back(fmt::format(
        "sandbox: $TMPDIR {} is not writable in this run: not an absolute path", tmpdir));
  }
  return {};
}

// Every git dir git would use: the repository the working directory is in (its root may be
// above the cwd, e.g. under /tmp), $GIT_DIR / $GIT_COMMON_DIR, and repositories inside the
// roots. Those outside every writable root are read-only anyway.
void AddCarveouts(const Settings& settings, const std::string& root, Policy* policy) {
  CarveoutList carveouts(&policy->read_only_carveouts);
  for (const std::string& writable : policy->writable_roots) AddGitCarveouts(carveouts, writable);
  AddProtectedPaths(settings, policy, carveouts);
  AddParentRepositories(carveouts, root);
  for (const char* name : {"GIT_DIR", "GIT_COMMON_DIR"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') {
      AddCarveout(carveouts, ResolvePath(JoinPath(root, value)));
    }
  }
  for (const std::string& writable : policy->writable_roots) {
    AddParentRepositories(carveouts, writable);
  }
  for (const std::string& carveout : policy->read_only_carveouts) {
    struct stat st;
    if (::stat(carveout.c_str(), &st) == 0) policy->carveout_ids.emplace_back(st.st_dev, st.st_ino);
  }
}

}  // namespace

Result<Policy> BuildPolicyWithoutNested(const Settings& settings, const std::string& cwd) {
  Policy policy;
  policy.mode = settings.mode;
  policy.require_full_isolation = settings.require_full_isolation;
  if (cwd.empty() || cwd.front() != '/') {
    return MakeError(fmt::format("sandbox: the working directory must be absolute, got '{}'", cwd));
  }
  std::string root, why;
  if (!Canonical(cwd, &root, &why)) {
    return MakeError(fmt::format("sandbox: cannot use working directory {}: {}", cwd, why));
  }
  switch (settings.mode) {
    case Mode::kDangerFullAccess:
      policy.network_access = true;
      return policy;
    case Mode::kReadOnly:
      policy.network_access = false;
      return policy;
    case Mode::kWorkspaceWrite:
      break;
  }
  policy.network_access = settings.network_access;
  // network_access = true means everything, as codex has it; an allow-list only without it.
  if (!settings.network_access) policy.proxy_port = settings.proxy_port;
  AddUnique(policy.writable_roots, root);
  if (Status added = AddTmpRoots(settings, cwd, &policy); !added.ok()) return added.error();
  for (const std::string& dir : settings.writable_roots) {
    AddOptionalRoot(cwd, dir, "writable root", &policy);
  }
  for (const std::string& dir : settings.add_dirs) AddOptionalRoot(cwd, dir, "--add-dir", &policy);
  AddCarveouts(settings, root, &policy);
  return policy;
}

Result<Policy> BuildPolicy(const Settings& settings, const std::string& cwd) {
  Result<Policy> policy = BuildPolicyWithoutNested(settings, cwd);
  if (!policy.ok()) return policy;
  std::vector<std::string> found;
  if (!SearchNested(
          policy->writable_roots, [] { return false; }, &found)) {
    return MakeError(kSearchOutOfResources);
  }
  AddNested(&*policy, found);
  return policy;
}

NestedScan::NestedScan(const Policy& base, const CancelToken& cancel)
    : roots_(base.writable_roots), cancel_(cancel) {}

void NestedScan::Start() {
  if (started_ || finished_ || roots_.empty()) return;
  started_ = true;
  try {
    thread_ = std::thread([this] { Search(); });
  } catch (const std::exception&) {
    // No thread to be had (system_error, bad_alloc): Finish searches on the caller's, as
    // BuildPolicy does. Nothing may escape: Start runs inside the model client's stream.
  }
}

NestedScan::~NestedScan() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void NestedScan::Search() {
  complete_ = SearchNested(
      roots_, [this] { return stop_.load(std::memory_order_relaxed) || cancel_.cancelled(); },
      &found_);
  searched_ = true;
}

Status NestedScan::Finish(Policy* policy) {
  if (finished_) return *finished_;
  if (thread_.joinable()) thread_.join();
  if (!searched_ && !roots_.empty()) Search();
  if (!roots_.empty() && !complete_) {
    finished_ = MakeError(
        cancel_.cancelled()
            ? "sandbox: the search for nested repositories was cancelled before it was complete"
            : kSearchOutOfResources);
  } else {
    AddNested(policy, found_);
    finished_ = Status{};
  }
  return *finished_;
}

}  // namespace ae::sandbox
