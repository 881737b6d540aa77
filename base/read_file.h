// Reading files. The ones agentexec finds on disk itself (config files, AGENTS.md, a `.git`
// file, session files) may be anything a command left there: a FIFO, socket or device in their
// place must neither block the run nor become its terminal, so they are read only when they
// are regular files. A file the user names on the command line may be a pipe
// (`--output-schema <(...)`) and is read as it is. One read loop serves both.
#pragma once

#include <cstddef>
#include <string>

#include "base/fd.h"
#include "base/result.h"

namespace ae {

// Opens `path` read-only when it is a regular file: O_NONBLOCK and O_NOCTTY at the open (a
// FIFO cannot block it, a terminal cannot become ours), then fstat on the descriptor (no window
// between a check and the open). Errors are errno's text ("No such file or directory", "Is a
// directory") or "not a regular file".
Result<Fd> OpenRegularFile(const std::string& path);

// A regular file's bytes, at most `max_bytes` of them when that is > 0.
Result<std::string> ReadRegularFile(const std::string& path, size_t max_bytes = 0);

// A regular file's first line, without its newline; at most `max_bytes` are read.
Result<std::string> ReadRegularFirstLine(const std::string& path, size_t max_bytes);

// A file the user named: a pipe or FIFO is read to its end; a directory is "Is a directory".
Result<std::string> ReadNamedFile(const std::string& path);

}  // namespace ae
