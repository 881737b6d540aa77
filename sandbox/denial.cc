#include "sandbox/denial.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "sandbox/mounts.h"
#include "sandbox/paths.h"

namespace ae::sandbox {
namespace {

char Lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) return false;
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    size_t j = 0;
    while (j < needle.size() && Lower(haystack[i + j]) == Lower(needle[j])) ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

bool HasDenialWording(std::string_view output) {
  for (std::string_view wording :
       {"operation not permitted", "permission denied", "read-only file system"}) {
    if (ContainsIgnoreCase(output, wording)) return true;
  }
  return false;
}

bool Failed(const RunResult& result) {
  return result.exit_code != 0 && !result.timed_out && !result.cancelled;
}

// Could agentexec, outside the sandbox, write `path`? The file if it exists, else the nearest
// directory that does (it would be created there). A read-only disk or the file's own mode
// refuse agentexec too, and then the sandbox is not the reason.
bool WritableOutside(const std::string& path) {
  std::string p = path;
  if (p.empty() || p.front() != '/') return false;
  for (;;) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0) {
      return ::faccessat(AT_FDCWD, p.c_str(), W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0;
    }
    if (p == "/") return false;
    size_t slash = p.rfind('/');
    p = slash == 0 ? "/" : p.substr(0, slash);
  }
}

}  // namespace

std::optional<Denial> FindDenial(const RunResult& result, const Policy& policy) {
  if (policy.unrestricted()) return std::nullopt;
  // The spawner prefixes the steps of ApplyInChild with "sandbox: "; execve or chdir failing
  // (a missing command, a missing directory) is not the sandbox's doing.
  if (result.setup_error.has_value()) {
    constexpr std::string_view kSandboxStep = "sandbox: ";
    if (!std::string_view(*result.setup_error).starts_with(kSandboxStep)) return std::nullopt;
    // Carve-outs lie in the writable roots, so a command can shape what this step meets (keep
    // moving a repository, bury it too deep for a path): rerunning it outside the sandbox
    // would hand it what the step protects. The model is told; nothing is rerun.
    if (std::string_view(*result.setup_error)
            .substr(kSandboxStep.size())
            .starts_with(kCarveoutStep)) {
      return Denial{false, "the sandbox could not keep a protected path read-only (" +
                               *result.setup_error + ")"};
    }
    return Denial{true, "the sandbox could not be set up (" + *result.setup_error + ")"};
  }
  if (!Failed(result)) return std::nullopt;

  const bool worded = HasDenialWording(result.output);
  for (const std::string& path : result.writes.refused) {
    if (!WritableOutside(path)) continue;  // refused anyway: not the sandbox
    std::string more;
    if (result.writes.refused_total > 1) {
      more = fmt::format("; {} paths refused in all", result.writes.refused_total);
    }
    const char* why = policy.mode == Mode::kReadOnly ? "the sandbox is read-only"
                      : IsUnderAny(path, policy.read_only_carveouts)
                          ? "a read-only .git or .agentexec"
                          : "outside the writable roots";
    return Denial{worded, fmt::format("its write to {} was refused ({}) and is allowed outside "
                                      "the sandbox{}",
                                      path, why, more)};
  }
  // With the network off, seccomp answers socket() with EPERM. The wording is all there is to
  // go on, so it only explains the failure to the model.
  if (!policy.network_access && ContainsIgnoreCase(result.output, "operation not permitted") &&
      (ContainsIgnoreCase(result.output, "socket") ||
       ContainsIgnoreCase(result.output, "connect"))) {
    return Denial{false, "a network call failed with EPERM and the network is off"};
  }
  return std::nullopt;
}

std::optional<std::string> UnobservedDenial(const RunResult& result, const Policy& policy) {
  if (policy.unrestricted() || result.writes.watched || result.setup_error.has_value()) {
    return std::nullopt;
  }
  if (!Failed(result) || !HasDenialWording(result.output)) return std::nullopt;
  return result.writes.unavailable.empty() ? std::string("the write watch was not in force")
                                           : result.writes.unavailable;
}

}  // namespace ae::sandbox
