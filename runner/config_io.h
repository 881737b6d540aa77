// Whole-file reads with the errno text users need ("No such file or directory").
#pragma once

#include <optional>
#include <string>

#include "base/result.h"

namespace ae {

// The file's bytes; on failure the error is strerror(errno) alone, for the caller to prefix.
Result<std::string> ReadWholeFile(const std::string& path);
// Like ReadWholeFile, but a file that does not exist is nullopt, not an error.
Result<std::optional<std::string>> ReadFileIfExists(const std::string& path);

}  // namespace ae
