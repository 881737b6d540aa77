// ReachableExecutable: a program of the build that a test runs as another user (nobody). A
// clone under /root (mode 0700, as a root user's clone is on a fresh machine) holds a build no
// other user can reach; such a test then runs a copy in the process's scratch directory.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/scratch_dir.h"

namespace ae::test {

// Whether every user may run `path`: it and each directory above it are open to others.
inline bool OpenToOthers(const std::string& path) {
  std::filesystem::path p = std::filesystem::absolute(path);
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
  for (p = p.parent_path(); !p.empty(); p = p.parent_path()) {
    if (::stat(p.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
    if (p == p.root_path()) break;
  }
  return true;
}

// `path` itself when every user may run it; else a copy (mode 0755) in a scratch directory of
// the process's own under /var/tmp, made once per process. Not under /tmp: a sandboxed run sees
// its own /tmp there, and of the host's only the entries that hold a writable root.
inline std::string ReachableExecutable(const std::string& path) {
  if (OpenToOthers(path)) return path;
  static std::mutex mu;
  static std::map<std::string, std::string> copies;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, added] = copies.try_emplace(path);
  if (added) {
    static const ScratchDir dir("ae-test-bin", "/var/tmp");
    it->second = dir.path() + "/" + std::to_string(copies.size()) + "-" +
                 std::filesystem::path(path).filename().string();
    std::error_code ec;
    std::filesystem::copy_file(path, it->second, ec);
    EXPECT_FALSE(ec) << "copy " << path << " to " << it->second << ": " << ec.message();
    ::chmod(it->second.c_str(), 0755);
  }
  return it->second;
}

}  // namespace ae::test
