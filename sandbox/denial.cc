#include "sandbox/denial.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "sandbox/confined_fs.h"
#include "sandbox/paths.h"

namespace ae::sandbox {
namespace {

// Bounds on the work spent reading a hostile output.
constexpr size_t kMaxLines = 200;
constexpr size_t kMaxCandidatesPerLine = 16;

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

bool HasDenialWording(std::string_view line) {
  for (std::string_view wording :
       {"operation not permitted", "permission denied", "read-only file system"}) {
    if (ContainsIgnoreCase(line, wording)) return true;
  }
  return false;
}

// Strips quotes and punctuation tools put around a path: 'x', "x", `x', ‘x’, “x”, x:, (x).
std::string_view StripQuotes(std::string_view t, bool* quoted) {
  static constexpr std::string_view kMulti[] = {"\u2018", "\u2019", "\u201c", "\u201d"};
  bool changed = true;
  while (changed && !t.empty()) {
    changed = false;
    for (std::string_view q : kMulti) {
      if (t.starts_with(q)) t.remove_prefix(q.size()), changed = *quoted = true;
      if (t.ends_with(q)) t.remove_suffix(q.size()), changed = *quoted = true;
    }
    constexpr std::string_view kQuotes = "'\"`";
    constexpr std::string_view kPunct = ",:;()[]<>";
    if (!t.empty() && kQuotes.find(t.front()) != std::string_view::npos) {
      t.remove_prefix(1), changed = *quoted = true;
    } else if (!t.empty() && kPunct.find(t.front()) != std::string_view::npos) {
      t.remove_prefix(1), changed = true;
    }
    if (!t.empty() && kQuotes.find(t.back()) != std::string_view::npos) {
      t.remove_suffix(1), changed = *quoted = true;
    } else if (!t.empty() && kPunct.find(t.back()) != std::string_view::npos) {
      t.remove_suffix(1), changed = true;
    }
  }
  return t;
}

// The words of `line` that name a path: quoted ones, or ones with a '/'.
std::vector<std::string> PathCandidates(std::string_view line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size() && out.size() < kMaxCandidatesPerLine) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    bool quoted = false;
    std::string_view word = StripQuotes(line.substr(i, j - i), &quoted);
    if (!word.empty() && (quoted || word.find('/') != std::string_view::npos) &&
        word.find('\0') == std::string_view::npos) {
      out.emplace_back(word);
    }
    i = j;
  }
  return out;
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

std::optional<Denial> FindDenial(const RunResult& result, const Policy& policy,
                                 const std::string& workdir) {
  if (policy.unrestricted()) return std::nullopt;
  // The spawner prefixes the steps of ApplyInChild with "sandbox: "; execve or chdir failing
  // (a missing command, a missing directory) is not the sandbox's doing.
  if (result.setup_error.has_value()) {
    if (result.setup_error->rfind("sandbox: ", 0) != 0) return std::nullopt;
    return Denial{true, "the sandbox could not be set up (" + *result.setup_error + ")"};
  }
  if (result.exit_code == 0 || result.timed_out || result.cancelled) return std::nullopt;

  const ConfinedFs cfs(policy);
  std::string_view out = result.output;
  size_t lines = 0;
  bool eperm_seen = false;
  while (!out.empty() && lines < kMaxLines) {
    size_t nl = out.find('\n');
    std::string_view line = out.substr(0, nl);
    out.remove_prefix(nl == std::string_view::npos ? out.size() : nl + 1);
    if (!HasDenialWording(line)) continue;
    ++lines;
    if (ContainsIgnoreCase(line, "operation not permitted")) eperm_seen = true;
    for (const std::string& word : PathCandidates(line)) {
      const std::string abs = JoinPath(workdir, word);
      std::string resolved;
      const int refused = cfs.Target(abs, &resolved);
      if (refused == 0 || refused == EINVAL) continue;  // the sandbox allows it: not the cause
      if (!WritableOutside(resolved)) continue;         // refused anyway: not the sandbox
      return Denial{
          true, fmt::format("writing {} is refused by the policy ({}) and allowed outside it", abs,
                            policy.mode == Mode::kReadOnly ? "the sandbox is read-only"
                            : refused == EROFS             ? "a read-only .git or .agentexec"
                                                           : "outside the writable roots")};
    }
  }
  // With the network off, seccomp answers socket() with EPERM. The wording is all there is to
  // go on, so it only explains the failure to the model.
  if (!policy.network_access && eperm_seen &&
      (ContainsIgnoreCase(result.output, "socket") ||
       ContainsIgnoreCase(result.output, "connect"))) {
    return Denial{false, "a network call failed with EPERM and the network is off"};
  }
  return std::nullopt;
}

}  // namespace ae::sandbox
