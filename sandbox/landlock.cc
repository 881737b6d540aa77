#include "sandbox/landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "sandbox/paths.h"
#include "sandbox/step.h"

// Debian 12's <linux/landlock.h> stops at ABI 2; the kernel here speaks ABI 7.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

namespace ae::sandbox::landlock {
namespace {

// The ruleset attribute as of ABI 6; older kernels get a prefix of it (see RulesetAttrSize).
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

size_t RulesetAttrSize(int abi) {
  if (abi >= 6) return sizeof(RulesetAttr);
  if (abi >= 4) return 2 * sizeof(uint64_t);
  return sizeof(uint64_t);
}

constexpr uint64_t kRead =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
// Rights that make sense on a file (the kernel refuses directory rights on a file rule).
constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                                 LANDLOCK_ACCESS_FS_IOCTL_DEV;

long CreateRuleset(const RulesetAttr* attr, size_t size, uint32_t flags) {
  return ::syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

long AddRule(long ruleset, int path_fd, uint64_t access) {
  struct landlock_path_beneath_attr rule = {};
  rule.allowed_access = access;
  rule.parent_fd = path_fd;
  return ::syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
}

// Adds a rule for `path` to the plan, restricted to what the ruleset handles, and tries it on
// `probe` so a refusal names the path. Missing optional paths (a device this container lacks)
// are skipped.
Status AddPathRule(RulesetPlan& plan, int probe, const std::string& path, uint64_t access,
                   bool optional) {
  Fd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd) {
    if (optional) return {};
    return MakeError(fmt::format("sandbox: cannot open {} for the Landlock ruleset: {}", path,
                                 std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return MakeError(fmt::format("sandbox: cannot stat {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) access &= kFileRights;
  access &= plan.handled_access_fs;
  if (access == 0) return {};
  if (AddRule(probe, fd.get(), access) != 0) {
    return MakeError(fmt::format("sandbox: landlock_add_rule {}: {}", path, std::strerror(errno)));
  }
  plan.rules.push_back({std::move(fd), access});
  return {};
}

bool Fail(const char* step, long ruleset, const char** failed_step, int* err) noexcept {
  FailStep(step, failed_step, err);  // before close() can change errno
  if (ruleset >= 0) ::close(static_cast<int>(ruleset));
  return false;
}

constexpr const char* kDevices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                    "/dev/urandom"};
constexpr const char* kTerminals[] = {"/dev/tty", "/dev/ptmx", "/dev/pts"};

// Devices commands expect to open for writing. Terminals also get ioctls (stty, prompts);
// TIOCSTI is refused by seccomp.
constexpr uint64_t kDevice =
    LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
constexpr uint64_t kTerminalRights =
    kDevice | LANDLOCK_ACCESS_FS_IOCTL_DEV | LANDLOCK_ACCESS_FS_READ_DIR;

// In the child: `access` (limited to what the ruleset handles, and to file rights on a
// non-directory) on `path` as the child's mount namespace has it.
bool AddChildRule(long ruleset, const char* path, uint64_t access, uint64_t handled,
                  const char* step, const char** failed_step, int* err) noexcept {
  int fd = ::open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return Fail(step, ruleset, failed_step, err);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Fail(step, ruleset, failed_step, err);
  }
  if (!S_ISDIR(st.st_mode)) access &= kFileRights;
  long added = AddRule(ruleset, fd, access & handled);
  int saved = errno;
  ::close(fd);
  errno = saved;
  if (added != 0) return Fail(step, ruleset, failed_step, err);
  return true;
}

}  // namespace

bool GrantsDeviceWrite(std::string_view path) {
  for (const char* dev : kDevices) {
    if (path == dev) return true;
  }
  for (const char* dev : kTerminals) {
    if (IsUnder(path, dev)) return true;
  }
  return false;
}

int Abi() {
  long abi = CreateRuleset(nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) {
    if (abi >= 0) errno = EOPNOTSUPP;
    return -1;
  }
  return static_cast<int>(abi);
}

unsigned long long HandledFsRights(int abi) {
  uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0..12
  if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return rights;
}

// Read and execute on every entry of `dir` except `hidden`, and listing `dir` itself: the
// entries as they are now (one created later stays unreadable to commands).
Status AddReadExcept(RulesetPlan& plan, int probe, const std::string& dir, const char* hidden) {
  if (Status s = AddPathRule(plan, probe, dir, LANDLOCK_ACCESS_FS_READ_DIR, false); !s.ok()) {
    return s;
  }
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return MakeError(fmt::format("sandbox: cannot list {}: {}", dir, std::strerror(errno)));
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name != "." && name != ".." && name != hidden) names.emplace_back(name);
  }
  ::closedir(d);
  for (const std::string& name : names) {
    const std::string path = (dir == "/" ? "" : dir) + "/" + name;
    // Links are reached through what they point to (/bin through /usr, /dev/stdout through
    // /proc); followed here they would grant whatever agentexec's own /proc/self names.
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
    // An entry Landlock cannot hold a rule for (gone since the listing, not a file-system
    // object) is simply not readable.
    (void)AddPathRule(plan, probe, path, kRead, true);
  }
  return {};
}

Result<RulesetPlan> PlanRuleset(const Policy& policy, int abi, bool private_devpts) {
  RulesetPlan plan;
  plan.abi = abi;
  plan.handled_access_fs = HandledFsRights(abi);
  if (abi >= 6) {
    // A confined command may not signal (or ptrace-like poke) processes outside its domain,
    // and with the network off may not reach abstract Unix sockets bound outside it (they
    // bypass the file system, e.g. a container runtime's control socket).
    plan.scoped = LANDLOCK_SCOPE_SIGNAL;
    if (!policy.network_access) plan.scoped |= LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
  }
  RulesetAttr attr = {plan.handled_access_fs, 0, plan.scoped};
  long fd = CreateRuleset(&attr, RulesetAttrSize(abi), 0);
  if (fd < 0) {
    return MakeError(fmt::format("sandbox: landlock_create_ruleset: {}", std::strerror(errno)));
  }
  Fd probe(static_cast<int>(fd));
  const uint64_t handled = plan.handled_access_fs;

  plan.private_devpts = private_devpts;
  if (private_devpts) {
    // The host's /dev/pts is hidden under the command's own instance (mounts.h).
    if (Status s = AddPathRule(plan, probe.get(), "/", kRead, false); !s.ok()) return s.error();
  } else {
    // No mount namespace to hide them: every path is readable except the host's terminals,
    // whose input (what the user types) a read would take. Landlock only grants, so the
    // grant on "/" is split into its entries, and /dev's, leaving out /dev/pts.
    if (Status s = AddReadExcept(plan, probe.get(), "/", "dev"); !s.ok()) return s.error();
    if (Status s = AddReadExcept(plan, probe.get(), "/dev", "pts"); !s.ok()) return s.error();
  }

  // Every write right under the roots except creating device nodes (root could mknod the
  // disk) and device ioctls. The private /dev/shm gets the same.
  const uint64_t write_rights =
      handled & ~(LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                  LANDLOCK_ACCESS_FS_IOCTL_DEV);
  plan.scratch_access = write_rights;
  for (const std::string& root : policy.writable_roots) {
    if (Status s = AddPathRule(plan, probe.get(), root, write_rights, false); !s.ok()) {
      return s.error();
    }
  }

  // Devices commands expect to open for writing. Terminals also get ioctls (stty, prompts);
  // TIOCSTI is refused by seccomp.
  for (const char* dev : kDevices) {
    if (Status s = AddPathRule(plan, probe.get(), dev, kDevice, true); !s.ok()) return s.error();
  }
  for (const char* dev : kTerminals) {
    // /dev/pts: granted in the child, on its private instance (RestrictSelf), or not at all.
    if (std::string_view(dev) == "/dev/pts") continue;
    if (Status s = AddPathRule(plan, probe.get(), dev, kTerminalRights, true); !s.ok()) {
      return s.error();
    }
  }
  return plan;
}

bool RestrictSelf(const RulesetPlan& plan, const char* scratch_dir, const char** failed_step,
                  int* err) noexcept {
  RulesetAttr attr = {plan.handled_access_fs, 0, plan.scoped};
  long ruleset = CreateRuleset(&attr, RulesetAttrSize(plan.abi), 0);
  if (ruleset < 0) return Fail("landlock_create_ruleset", -1, failed_step, err);
  for (const RulesetPlan::Rule& rule : plan.rules) {
    if (AddRule(ruleset, rule.path.get(), rule.access) != 0) {
      return Fail("landlock_add_rule", ruleset, failed_step, err);
    }
  }
  if (scratch_dir != nullptr) {
    int fd = ::open(scratch_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return Fail("open the private /dev/shm", ruleset, failed_step, err);
    long added = AddRule(ruleset, fd, plan.scratch_access);
    int saved = errno;
    ::close(fd);
    errno = saved;
    if (added != 0)
      return Fail("landlock_add_rule for the private /dev/shm", ruleset, failed_step, err);
  }
  // The command's own devpts instance, mounted in its namespace (a rule on the host's, taken
  // in the parent, would not reach the instance stacked on it).
  if (plan.private_devpts &&
      (!AddChildRule(ruleset, "/dev/pts", kTerminalRights, plan.handled_access_fs,
                     "landlock_add_rule for the private /dev/pts", failed_step, err) ||
       !AddChildRule(ruleset, "/dev/ptmx", kTerminalRights, plan.handled_access_fs,
                     "landlock_add_rule for the private /dev/ptmx", failed_step, err))) {
    return false;
  }
  if (::syscall(__NR_landlock_restrict_self, ruleset, 0) != 0) {
    return Fail("landlock_restrict_self", ruleset, failed_step, err);
  }
  ::close(static_cast<int>(ruleset));
  return true;
}

}  // namespace ae::sandbox::landlock
