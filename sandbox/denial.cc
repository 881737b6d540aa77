#include "sandbox/denial.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
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

const char* WhyRefused(const Policy& policy, const std::string& path) {
  return policy.mode == Mode::kReadOnly                 ? "the sandbox is read-only"
         : IsUnderAny(path, policy.read_only_carveouts) ? "a read-only .git or .agentexec"
                                                        : "outside the writable roots";
}

bool PolicyRefusesWrite(const Policy& policy, const std::string& path) {
  return policy.mode == Mode::kReadOnly || !IsUnderAny(path, policy.writable_roots) ||
         IsUnderAny(path, policy.read_only_carveouts);
}

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// The paths a line of output names: quoted ('x', "x", `x', ‘x’) or, unquoted, any word with a
// slash, without the punctuation around it ("cat: ./a: Permission denied"). A quote after a
// letter is an apostrophe ("can't"), not an opening quote. At most `max` in *out.
void NamedPaths(std::string_view line, size_t max, std::vector<std::string>* out) {
  constexpr std::string_view kOpenCurly = "\xe2\x80\x98", kCloseCurly = "\xe2\x80\x99";
  std::string rest;  // the line without its quoted parts
  // Per closing quote (' " ’): from where on the line has none, so that a line of a million
  // unclosed quotes is read once, not once per quote.
  size_t none_after[3] = {std::string_view::npos, std::string_view::npos, std::string_view::npos};
  size_t i = 0;
  while (i < line.size() && out->size() < max) {
    std::string_view close;
    size_t open_len = 1, kind = 0;
    if (i > 0 && IsAlnum(line[i - 1])) {
      // not an opening quote
    } else if (line[i] == '\'' || line[i] == '`') {
      close = "'";
    } else if (line[i] == '"') {
      close = "\"";
      kind = 1;
    } else if (line.substr(i).starts_with(kOpenCurly)) {
      close = kCloseCurly;
      open_len = kOpenCurly.size();
      kind = 2;
    }
    size_t end = std::string_view::npos;
    if (!close.empty() && i < none_after[kind]) {
      end = line.find(close, i + open_len);
      if (end == std::string_view::npos) none_after[kind] = i;
    }
    if (end == std::string_view::npos) {
      rest += line[i++];
      continue;
    }
    out->emplace_back(line.substr(i + open_len, end - i - open_len));
    rest += ' ';
    i = end + close.size();
  }
  size_t pos = 0;
  while (pos < rest.size() && out->size() < max) {
    size_t start = rest.find_first_not_of(" \t", pos);
    if (start == std::string::npos) break;
    size_t stop = rest.find_first_of(" \t", start);
    if (stop == std::string::npos) stop = rest.size();
    std::string_view word = std::string_view(rest).substr(start, stop - start);
    pos = stop;
    while (!word.empty() && std::string_view("([<").find(word.front()) != std::string_view::npos) {
      word.remove_prefix(1);
    }
    while (!word.empty() &&
           std::string_view(":,;.)]>").find(word.back()) != std::string_view::npos) {
      word.remove_suffix(1);
    }
    if (word.find('/') != std::string_view::npos) out->emplace_back(word);
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
    return Denial{worded, fmt::format("its write to {} was refused ({}) and is allowed outside "
                                      "the sandbox{}",
                                      path, WhyRefused(policy, path), more)};
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

std::optional<Denial> AdvisoryDenial(const RunResult& result, const Policy& policy,
                                     const std::string& workdir) {
  if (policy.unrestricted() || result.writes.watched || result.setup_error.has_value()) {
    return std::nullopt;
  }
  if (!Failed(result) || !HasDenialWording(result.output)) return std::nullopt;
  // Bounded: the output is the command's, up to the capture's size.
  constexpr size_t kMaxLines = 64, kMaxPaths = 32;
  std::vector<std::string> named;
  size_t lines = 0;
  std::string_view output = result.output;
  while (!output.empty() && lines < kMaxLines && named.size() < kMaxPaths) {
    const size_t nl = output.find('\n');
    const std::string_view line = output.substr(0, nl);
    output.remove_prefix(nl == std::string_view::npos ? output.size() : nl + 1);
    if (!HasDenialWording(line)) continue;
    ++lines;
    NamedPaths(line, kMaxPaths, &named);
  }
  bool explained = false;  // a path it names that the sandbox is not why it failed on
  for (const std::string& raw : named) {
    if (raw.empty() || raw.size() > PATH_MAX || raw.find('\0') != std::string::npos) continue;
    if (raw.front() != '/' && (workdir.empty() || workdir.front() != '/')) continue;
    const std::string path = ResolvePath(raw.front() == '/' ? raw : workdir + "/" + raw);
    // Devices and /proc explain a failure of their own: the sandbox grants the devices a
    // command writes to, and /proc refuses most writes to anyone.
    if (IsUnder(path, "/dev") || IsUnder(path, "/proc") || !PolicyRefusesWrite(policy, path) ||
        !WritableOutside(path)) {
      explained = true;
      continue;
    }
    return Denial{false, fmt::format("its output names {} with a permission error: a write "
                                     "there is refused ({}) and allowed outside the sandbox",
                                     path, WhyRefused(policy, path))};
  }
  if (explained) return std::nullopt;
  return Denial{false, "it failed with a permission error and names no path to check", true};
}

}  // namespace ae::sandbox
