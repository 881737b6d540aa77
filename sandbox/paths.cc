#include "sandbox/paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <deque>

namespace ae::sandbox {
namespace {

std::deque<std::string> SplitComponents(std::string_view path) {
  std::deque<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) parts.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

void PopComponent(std::string& path) {
  size_t slash = path.rfind('/');
  path.resize(slash == 0 ? 1 : slash);
}

void PushComponent(std::string& path, std::string_view name) {
  if (path.size() > 1) path += '/';
  path += name;
}

}  // namespace

std::string NormalizePath(std::string_view path) {
  std::string out = "/";
  for (const std::string& part : SplitComponents(path)) {
    if (part == ".") continue;
    if (part == "..") {
      PopComponent(out);
      continue;
    }
    PushComponent(out, part);
  }
  return out;
}

std::string ResolvePath(std::string_view path) {
  bool via_proc = false;
  return ResolvePath(path, &via_proc);
}

std::string ResolvePath(std::string_view path, bool* via_proc) {
  *via_proc = false;
  std::deque<std::string> todo = SplitComponents(path);
  std::string out = "/";
  int links = 0;
  bool missing = false;  // once a component is missing, the rest is taken as written
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      PopComponent(out);  // `out` has no symlinks, so its parent is the real parent
      continue;
    }
    std::string next = out;
    PushComponent(next, part);
    if (IsUnder(next, "/proc")) *via_proc = true;
    if (missing) {
      out = std::move(next);
      continue;
    }
    struct stat st;
    if (::lstat(next.c_str(), &st) != 0) {
      missing = true;
      out = std::move(next);
      continue;
    }
    if (!S_ISLNK(st.st_mode)) {
      out = std::move(next);
      continue;
    }
    if (++links > 40) {  // a loop: the kernel would say ELOOP; keep the path as written
      out = std::move(next);
      missing = true;
      continue;
    }
    char target[4096];
    ssize_t n = ::readlink(next.c_str(), target, sizeof target);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof target) {
      out = std::move(next);
      missing = true;
      continue;
    }
    std::string_view link(target, static_cast<size_t>(n));
    std::deque<std::string> parts = SplitComponents(link);
    todo.insert(todo.begin(), parts.begin(), parts.end());
    if (link.front() == '/') out = "/";
  }
  return out;
}

bool IsUnder(std::string_view path, std::string_view dir) {
  if (dir == "/") return !path.empty() && path.front() == '/';
  if (path.size() < dir.size() || path.compare(0, dir.size(), dir) != 0) return false;
  return path.size() == dir.size() || path[dir.size()] == '/';
}

bool IsUnderAny(std::string_view path, const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) {
    if (IsUnder(path, dir)) return true;
  }
  return false;
}

std::string JoinPath(std::string_view base, std::string_view path) {
  if (!path.empty() && path.front() == '/') return NormalizePath(path);
  std::string joined(base);
  joined += '/';
  joined += path;
  return NormalizePath(joined);
}

}  // namespace ae::sandbox
