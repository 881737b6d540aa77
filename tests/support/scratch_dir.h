// ScratchDir: the one temporary directory helper of the test suite. Every test that writes
// files does so under a ScratchDir, so nothing is left in /tmp after a run (CI shares this
// machine's /tmp, and a large /tmp has broken tests before).
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace ae::test {

// A fresh directory PARENT/PREFIX-XXXXXX, /tmp unless told (mode 0755, canonical path),
// removed with everything in it when the object goes away.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix = "ae-test", const std::string& parent = "/tmp") {
    std::string tmpl = parent + "/" + prefix + "-XXXXXX";
    const char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << tmpl;
    if (made == nullptr) {
      path_ = "/nonexistent";
      return;
    }
    ::chmod(made, 0755);
    std::error_code ec;
    path_ = std::filesystem::canonical(made, ec).string();
    if (ec) path_ = made;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (path_ != "/nonexistent") std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// One ScratchDir for the whole test process, for files that outlive a single test (removed
// when the process exits normally, as gtest_main does).
inline const ScratchDir& ProcessScratchDir() {
  static const ScratchDir dir("ae-test-process");
  return dir;
}

}  // namespace ae::test
