#include "runner/apply_patch_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>

#include "base/write_all.h"
#include "cli/exit_code.h"
#include "engine/tools/apply_patch/applier.h"
#include "engine/tools/apply_patch/parser.h"
#include "sandbox/confined_fs.h"
#include "sandbox/policy.h"

namespace ae {

int RunApplyPatchCommand(int argc, const char* const* argv) {
  if (argc != 3) {
    return FailWith(ExitCode::kUsage,
                    fmt::format("{} takes one argument, the patch", kRunAsApplyPatchFlag));
  }
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) {
    return FailWith(ExitCode::kTurnFailed, "cannot find the current directory");
  }
  Result<patch::Patch> parsed = patch::ParsePatch(argv[2]);
  if (!parsed.ok()) return FailWith(ExitCode::kTurnFailed, parsed.message());
  if (parsed->hunks.empty()) return FailWith(ExitCode::kTurnFailed, "No files were modified.");
  sandbox::Policy unconfined;
  unconfined.mode = sandbox::Mode::kDangerFullAccess;
  const sandbox::ConfinedFs fs(unconfined);
  Result<patch::Plan> plan = patch::PlanPatch(*parsed, cwd, fs);
  if (!plan.ok()) return FailWith(ExitCode::kTurnFailed, plan.message());
  if (Status committed = patch::Commit(*plan, fs); !committed.ok()) {
    return FailWith(ExitCode::kTurnFailed, committed.message());
  }
  Status written =
      WriteAll(STDOUT_FILENO, "Success. Updated the following files:\n" + plan->summary);
  if (!written.ok()) return FailWith(ExitCode::kOutputFailed, "stdout: " + written.message());
  return ToInt(ExitCode::kOk);
}

}  // namespace ae
