// Config files as agentexec finds them: read only when they are regular files (base/read_file),
// with the errno text users need ("No such file or directory").
#pragma once

#include <optional>
#include <string>

#include "base/result.h"

namespace ae {

// The file's bytes, nullopt when it does not exist; on failure the error is the reason alone
// ("Is a directory", "not a regular file"), for the caller to prefix.
Result<std::optional<std::string>> ReadFileIfExists(const std::string& path);

}  // namespace ae
