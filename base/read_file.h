// Reading files. The ones agentexec finds on disk itself (config files, AGENTS.md, a `.git`
// file, session files) may be anything a command or a pull request left there: a FIFO, socket
// or device in their place must neither block the run nor become its terminal, so they are
// read only when they are regular files; and since agentexec reads them with its own rights,
// outside the sandbox, they are opened beneath a trusted directory (base/beneath.h) so a
// symlink cannot lead out of it. A file the user names on the command line may be a pipe
// (`--output-schema <(...)`) and is read as it is. One read loop serves all.
//
// None of them reads a pseudo file system (procfs, sysfs, ...): /proc/self/environ read by
// agentexec is agentexec's environment, API keys included, where a confined command reading
// the same path sees only its own. Such a file is refused however it was reached.
#pragma once

#include <cstddef>
#include <string>

#include "base/fd.h"
#include "base/result.h"

namespace ae {

// Error::code of a failure that is only "there is no such file".
inline constexpr const char* kFileNotFound = "not_found";

// Opens `path` read-only when it is a regular file: O_NONBLOCK and O_NOCTTY at the open (a
// FIFO cannot block it, a terminal cannot become ours), then fstat and fstatfs on the
// descriptor (no window between a check and the open). Errors are errno's text ("No such file
// or directory", with code kFileNotFound; "Is a directory"), "not a regular file", or "on the
// proc pseudo file system" (sysfs, ...).
Result<Fd> OpenRegularFile(const std::string& path);

// The same for `rel` beneath the directory `dirfd` (base/beneath.h, symlinks that stay beneath
// are followed). More errors: "a symbolic link leads outside the directory it is read from",
// and errno's text for a magic link ("Too many levels of symbolic links").
Result<Fd> OpenRegularFileBeneath(int dirfd, const std::string& rel);

// A regular file's bytes, at most `max_bytes` of them when that is > 0.
Result<std::string> ReadRegularFile(const std::string& path, size_t max_bytes = 0);
Result<std::string> ReadRegularFileBeneath(int dirfd, const std::string& rel, size_t max_bytes = 0);

// A regular file's first line, without its newline; at most `max_bytes` are read.
Result<std::string> ReadRegularFirstLine(const std::string& path, size_t max_bytes);
Result<std::string> ReadRegularFirstLineBeneath(int dirfd, const std::string& rel,
                                                size_t max_bytes);

// A file the user named: a pipe or FIFO is read to its end; a directory is "Is a directory";
// a file on a pseudo file system is refused as above (a link planted where the user expected a
// file must not hand it agentexec's /proc/self).
Result<std::string> ReadNamedFile(const std::string& path);

// The name of the pseudo file system `fd` is on ("proc", "sysfs", ...), nullptr for a real one.
const char* PseudoFileSystem(int fd);

}  // namespace ae
