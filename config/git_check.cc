#include "config/git_check.h"

#include <sys/stat.h>

namespace ae {

std::optional<std::string> FindGitRoot(const std::string& cwd) {
  std::string dir = cwd;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  while (true) {
    struct stat st {};
    const std::string git = (dir == "/" ? "" : dir) + "/.git";
    if (::stat(git.c_str(), &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
      return dir;
    }
    if (dir == "/" || dir.empty()) return std::nullopt;
    size_t slash = dir.rfind('/');
    if (slash == std::string::npos) return std::nullopt;
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
}

Status CheckGitRepo(const std::string& cwd, bool skip_git_repo_check) {
  if (skip_git_repo_check || FindGitRoot(cwd)) return {};
  return MakeError(kNotInGitRepoMessage);
}

}  // namespace ae
