// Process checks for tests that must prove nothing was left running: which processes carry a
// marker in their command line (scanned from /proc), bounded waits for them to go or appear,
// and the real python3 interpreter (a version manager's shim script starts too slowly).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"

namespace ae::test {

// Pids whose command line holds `marker` (pick one no other process uses).
inline std::vector<int> ProcessesWith(const std::string& marker) {
  std::vector<int> pids;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return pids;
  while (dirent* e = ::readdir(d)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    // Read with read(2): a process that exits between the open and the read makes it fail
    // with ESRCH, which an ifstream's buffer turns into an exception.
    std::string cmdline;
    const Fd fd(
        ::open((std::string("/proc/") + e->d_name + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) cmdline.append(buf, static_cast<size_t>(n));
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(marker) != std::string::npos) pids.push_back(pid);
  }
  ::closedir(d);
  return pids;
}

// Bounded (5 s): the kernel finishes a SIGKILLed tree asynchronously. True when none is left.
inline bool AllGone(const std::string& marker) {
  for (int i = 0; i < 100; ++i) {
    if (ProcessesWith(marker).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Bounded (5 s): true once at least `count` processes carry `marker`.
inline bool Appears(const std::string& marker, size_t count) {
  for (int i = 0; i < 100; ++i) {
    if (ProcessesWith(marker).size() >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The python3 interpreter's own path ("" without python3).
inline std::string RealPython() {
  FILE* p = ::popen("python3 -c 'import sys; print(sys.executable)' 2>/dev/null", "r");
  if (p == nullptr) return "";
  char buf[512] = {0};
  std::string path = std::fgets(buf, sizeof buf, p) != nullptr ? buf : "";
  ::pclose(p);
  while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
  return path;
}

}  // namespace ae::test
