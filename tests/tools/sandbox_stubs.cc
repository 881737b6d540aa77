// Weak stand-ins for the sandbox functions the tools call, so this test binary links while
// the sandbox's own implementation is being written. The real (strong) definitions in
// ae_sandbox win as soon as they exist; remove this file then.
#include "sandbox/denial.h"
#include "sandbox/policy.h"
#include "sandbox/prepared.h"

namespace ae::sandbox {

struct PreparedSandbox {};

__attribute__((weak)) void PreparedDeleter::operator()(PreparedSandbox* p) const {
  delete p;
}

__attribute__((weak)) Result<PreparedPtr> Prepare(const Policy&) {
  return MakeError("sandbox not implemented yet");
}

__attribute__((weak)) bool ApplyInChild(const PreparedSandbox&, const char** failed_step,
                                        int* err) noexcept {
  *failed_step = "not implemented";
  *err = 38;  // ENOSYS
  return false;
}

__attribute__((weak)) bool LooksSandboxDenied(const RunResult&) {
  return false;
}

__attribute__((weak)) const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kReadOnly:
      return "read-only";
    case Mode::kWorkspaceWrite:
      return "workspace-write";
    case Mode::kDangerFullAccess:
      return "danger-full-access";
  }
  return "read-only";
}

// Prefix match on whole path components against the writable roots, minus carve-outs.
__attribute__((weak)) bool Policy::CanWrite(std::string_view path) const {
  auto under = [&](std::string_view root) {
    if (path.substr(0, root.size()) != root) return false;
    return path.size() == root.size() || root == "/" || path[root.size()] == '/';
  };
  if (mode == Mode::kDangerFullAccess) return true;
  if (mode == Mode::kReadOnly) return false;
  for (const auto& c : read_only_carveouts) {
    if (under(c)) return false;
  }
  for (const auto& r : writable_roots) {
    if (under(r)) return true;
  }
  return false;
}

}  // namespace ae::sandbox
