#include "sandbox/policy.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "base/fd.h"
#include "base/read_file.h"
#include "sandbox/confined_fs.h"
#include "sandbox/paths.h"

namespace ae::sandbox {
namespace {

void AddUnique(std::vector<std::string>& list, std::string value) {
  for (const std::string& existing : list) {
    if (existing == value) return;
  }
  list.push_back(std::move(value));
}

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
void AddCarveout(std::vector<std::string>& carveouts, const std::string& path) {
  AddUnique(carveouts, path);
  AddUnique(carveouts, ResolvePath(path));
}

// `<root>/.git`: a directory, or in a linked worktree a file "gitdir: <path>" naming the
// worktree's git dir, whose "commondir" names the main repository's git dir. Git writes hooks,
// config and refs there, so all of them stay read-only.
void AddGitCarveouts(std::vector<std::string>& carveouts, const std::string& root) {
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
void AddExistingCarveouts(std::vector<std::string>& carveouts, const std::string& dir) {
  if (Exists(JoinPath(dir, ".git"))) AddGitCarveouts(carveouts, dir);
  if (Exists(JoinPath(dir, ".agentexec"))) AddCarveout(carveouts, JoinPath(dir, ".agentexec"));
}

// Repositories git would find from `dir`: its own and every parent directory's (git walks up
// to the first `.git`; protecting every one on the way is simpler and covers a cwd that moves).
void AddParentRepositories(std::vector<std::string>& carveouts, const std::string& dir) {
  for (std::string at = dir;; at = NormalizePath(at + "/..")) {
    AddExistingCarveouts(carveouts, at);
    if (at == "/") break;
  }
}

// Nested repositories, submodules and worktrees inside a writable root: every `.git` (directory
// or gitfile) and `.agentexec` below it, breadth first, without following symlinks or entering
// a `.git`, within the bounds (the root's own are added by the caller). Returns false when a
// bound stopped the scan.
bool AddNestedRepositories(std::vector<std::string>& carveouts, const std::string& root) {
  std::deque<std::pair<std::string, int>> todo = {{root, 0}};
  size_t dirs = 0;
  bool complete = true;
  while (!todo.empty()) {
    auto [dir, depth] = std::move(todo.front());
    todo.pop_front();
    if (++dirs > kNestedScanMaxDirs) return false;
    DIR* handle = ::opendir(dir.c_str());
    if (handle == nullptr) continue;  // unreadable to us: git running as us cannot use it either
    while (dirent* entry = ::readdir(handle)) {
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      const std::string path = JoinPath(dir, name);
      if (dir != root && (name == ".git" || name == ".agentexec")) {
        if (name == ".git") {
          AddGitCarveouts(carveouts, dir);
        } else {
          AddCarveout(carveouts, path);
        }
        continue;
      }
      if (name == ".git") continue;
      unsigned char type = entry->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (::lstat(path.c_str(), &st) != 0) continue;
        type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
      }
      if (type != DT_DIR) continue;
      if (depth + 1 > kNestedScanMaxDepth) {
        complete = false;
        continue;
      }
      todo.emplace_back(path, depth + 1);
    }
    ::closedir(handle);
  }
  return complete;
}

}  // namespace

bool Policy::CanWrite(std::string_view path) const {
  // One rule for every write check: the one agentexec's own writes are held to.
  std::string resolved;
  return ConfinedFs(*this).Target(std::string(path), &resolved) == 0;
}

Result<Policy> BuildPolicy(const Settings& settings, const std::string& cwd) {
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
  AddUnique(policy.writable_roots, root);

  // Optional roots that do not exist are skipped with a warning, never made up.
  auto add_optional = [&](const std::string& given, const std::string& what) {
    std::string canonical, reason;
    if (Canonical(JoinPath(cwd, given), &canonical, &reason)) {
      AddUnique(policy.writable_roots, canonical);
    } else {
      policy.warnings.push_back(
          fmt::format("sandbox: {} {} is not writable in this run: {}", what, given, reason));
    }
  };
  if (!settings.exclude_slash_tmp) {
    std::string tmp, reason;
    if (Canonical("/tmp", &tmp, &reason)) AddUnique(policy.writable_roots, tmp);
  }
  if (!settings.exclude_tmpdir_env_var) {
    const char* tmpdir = std::getenv("TMPDIR");
    if (tmpdir != nullptr && *tmpdir != '\0') {
      if (tmpdir[0] == '/') {
        add_optional(tmpdir, "$TMPDIR");
      } else {
        policy.warnings.push_back(fmt::format(
            "sandbox: $TMPDIR {} is not writable in this run: not an absolute path", tmpdir));
      }
    }
  }
  for (const std::string& dir : settings.writable_roots) add_optional(dir, "writable root");
  for (const std::string& dir : settings.add_dirs) add_optional(dir, "--add-dir");

  for (const std::string& writable : policy.writable_roots) {
    AddGitCarveouts(policy.read_only_carveouts, writable);
    AddCarveout(policy.read_only_carveouts, JoinPath(writable, ".agentexec"));
  }
  // agentexec's home (and codex's) below a root, under whatever name: listed whether or not
  // they exist yet, like `<root>/.agentexec`. One that is a root itself, or holds one, was
  // given as writable by the user.
  for (const std::string& dir : settings.read_only_dirs) {
    if (dir.empty() || dir.front() != '/') continue;
    const std::string normal = NormalizePath(dir);
    const std::string resolved = ResolvePath(normal);
    for (const std::string& writable : policy.writable_roots) {
      if ((normal != writable && IsUnder(normal, writable)) ||
          (resolved != writable && IsUnder(resolved, writable))) {
        AddCarveout(policy.read_only_carveouts, normal);
        break;
      }
    }
  }
  // Every git dir git would use: the repository the working directory is in (its root may be
  // above the cwd, e.g. under /tmp), $GIT_DIR / $GIT_COMMON_DIR, and repositories inside the
  // roots. Those outside every writable root are read-only anyway.
  AddParentRepositories(policy.read_only_carveouts, root);
  for (const char* name : {"GIT_DIR", "GIT_COMMON_DIR"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') {
      AddCarveout(policy.read_only_carveouts, ResolvePath(JoinPath(root, value)));
    }
  }
  // The shared temporary roots (/tmp, $TMPDIR) are scanned too, but only as far as the bound
  // goes and without a warning: a busy machine's /tmp exceeds any bound, and a warning on every
  // run would teach users to ignore warnings. The workspace and the roots the user named warn.
  std::vector<std::string> temp_roots;
  for (const char* temp :
       {static_cast<const char*>("/tmp"), static_cast<const char*>(std::getenv("TMPDIR"))}) {
    std::string canonical, reason;
    if (temp != nullptr && temp[0] == '/' && Canonical(temp, &canonical, &reason)) {
      temp_roots.push_back(canonical);
    }
  }
  const size_t roots = policy.writable_roots.size();
  for (size_t i = 0; i < roots; ++i) {
    const std::string writable = policy.writable_roots[i];
    AddParentRepositories(policy.read_only_carveouts, writable);
    const bool shared_temp = writable != root && std::find(temp_roots.begin(), temp_roots.end(),
                                                           writable) != temp_roots.end();
    if (!AddNestedRepositories(policy.read_only_carveouts, writable) && !shared_temp) {
      policy.warnings.push_back(fmt::format(
          "sandbox: the search for nested repositories in {} stopped at its bound ({} levels, "
          "{} directories): a .git or .agentexec beyond it is writable in this run",
          writable, kNestedScanMaxDepth, kNestedScanMaxDirs));
    }
  }
  for (const std::string& carveout : policy.read_only_carveouts) {
    struct stat st;
    if (::stat(carveout.c_str(), &st) == 0) policy.carveout_ids.emplace_back(st.st_dev, st.st_ino);
  }
  return policy;
}

}  // namespace ae::sandbox
