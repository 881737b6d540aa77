// Path arithmetic for the policy: lexical normalisation, symlink resolution that also follows
// dangling links (a link to a file that does not exist yet still points somewhere), and the
// "is this path inside that directory" test. No path here is trusted to be canonical.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ae::sandbox {

// "/a//b/./c/../d" -> "/a/b/d". `path` must be absolute; ".." never climbs above "/".
std::string NormalizePath(std::string_view path);

// Resolves every symlink along an absolute path, like realpath(3), but components that do
// not exist are appended as they are, and a dangling symlink is followed to where it points.
// Used so a policy check sees where a write would really land.
std::string ResolvePath(std::string_view path);
// The same; *via_proc says whether the walk passed through /proc, whose links (/proc/self,
// /proc/PID/fd/N) resolve in the context of the process reading them, not of the one whose
// path it was.
std::string ResolvePath(std::string_view path, bool* via_proc);

// True when `path` is `dir` or lies below it. Both must be normalised.
bool IsUnder(std::string_view path, std::string_view dir);
bool IsUnderAny(std::string_view path, const std::vector<std::string>& dirs);

// `base` joined with `path` unless `path` is absolute; the result is normalised.
std::string JoinPath(std::string_view base, std::string_view path);

}  // namespace ae::sandbox
