#pragma once

namespace ae {

// In a LeakSanitizer build, checks for leaks now and skips the check at exit; elsewhere it does
// nothing. Called just before a process confines itself: LeakSanitizer stops the world with
// ptrace and reads /proc/PID/task, which the sandbox forbids, so a check at exit would fail
// inside it instead of checking anything.
void CheckLeaksNow();

}  // namespace ae
