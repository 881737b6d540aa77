// Config files as agentexec finds them: read only when they are regular files on a real file
// system (base/read_file), with the errno text users need ("No such file or directory").
#pragma once

#include <optional>
#include <string>

#include "base/result.h"

namespace ae {

// The file's bytes, nullopt when it does not exist; on failure the error is the reason alone
// ("Is a directory", "not a regular file"), for the caller to prefix. With `beneath` (a
// directory `path` is inside), the file is opened beneath it (base/beneath.h): the project's
// `.agentexec/config.toml` is the repository's, and a symlink committed there must not make
// agentexec read a file outside it. Without it (the user's own config, where a dotfile symlink
// is normal) the path is opened as it is.
Result<std::optional<std::string>> ReadFileIfExists(const std::string& path,
                                                    const std::string& beneath = "");

}  // namespace ae
