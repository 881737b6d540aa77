// The build artefacts a run's changes leave out (scripts/ci/artefacts.gitignore, compiled in):
// what `batch` stages for changes.patch and the task's commit.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ae {

// The file's exact text (generated from scripts/ci/artefacts.gitignore at build time).
std::string_view ArtefactsGitignore();

// Its patterns as `git ls-files` options: one `--exclude=PATTERN` for each line that is not a
// comment or blank.
std::vector<std::string> ArtefactExcludeArgs();

}  // namespace ae
