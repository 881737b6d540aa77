// The git commit this binary was built from, for --version. Its own file and library
// (ae_build_commit) because it is the one thing that changes with every commit: the build
// compiles this file again when HEAD moves (cmake/Version.cmake), and nothing else.
#pragma once

namespace ae {

// A short hash, or "unknown" outside a git checkout.
const char* BuildCommit();

}  // namespace ae
