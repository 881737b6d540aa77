#include "sandbox/denial.h"

#include <csignal>
#include <initializer_list>
#include <string_view>

namespace ae::sandbox {
namespace {

bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  if (needle.size() > haystack.size()) return false;
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    size_t j = 0;
    while (j < needle.size() && lower(haystack[i + j]) == lower(needle[j])) ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

}  // namespace

bool LooksSandboxDenied(const RunResult& result) {
  // The spawner prefixes the steps of ApplyInChild with "sandbox: "; execve or chdir failing
  // (a missing command, a missing directory) is not the sandbox's doing.
  if (result.setup_error.has_value()) return result.setup_error->rfind("sandbox: ", 0) == 0;
  if (result.term_signal == SIGSYS) return true;  // seccomp's bad-architecture kill
  if (result.exit_code == 0 || result.timed_out || result.cancelled) return false;
  for (std::string_view wording :
       {"operation not permitted", "permission denied", "read-only file system"}) {
    if (ContainsIgnoreCase(result.output, wording)) return true;
  }
  return false;
}

}  // namespace ae::sandbox
