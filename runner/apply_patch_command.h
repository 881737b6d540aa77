// `agentexec --codex-run-as-apply-patch PATCH`: codex's own way to apply a patch with no model
// (the argument codex's binary answers to), applied in the working directory as the user who
// runs it, unconfined, as codex does.
#pragma once

namespace ae {

// The flag, as codex spells it.
inline constexpr const char* kRunAsApplyPatchFlag = "--codex-run-as-apply-patch";

// argv[1] is the flag, argv[2] the patch. Prints "Success. Updated the following files:" and
// one "A|M|D path" line a file on stdout and returns 0; a patch that does not apply changes
// nothing, says why on stderr and returns 1; a missing patch is a usage error (2).
int RunApplyPatchCommand(int argc, const char* const* argv);

}  // namespace ae
