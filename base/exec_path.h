// PATH lookup done in the parent before fork, so the child (which may only make
// async-signal-safe calls) never allocates the way execvp would.
#pragma once

#include <string>
#include <vector>

namespace ae {

// `name` itself when it contains a '/'; else the first executable NAME in the PATH of `env`
// ("NAME=value" entries; /usr/local/bin:/usr/bin:/bin when it has none); "" if not found.
std::string FindExecutable(const std::string& name, const std::vector<std::string>& env);

}  // namespace ae
