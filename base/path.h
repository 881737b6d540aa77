// Paths as text: resolved against a directory without touching the file system.
#pragma once

#include <string>

namespace ae {

// `path` resolved against `base` (an absolute `path` stays as it is), lexically normalised
// ("a/../b" is "b"), without a trailing slash except for "/" itself. Nothing is resolved on
// disk: symbolic links are the business of whoever opens the result.
std::string ResolvedPath(const std::string& base, const std::string& path);

}  // namespace ae
