// BenchDir: the benchmarks' one temporary directory helper, made under the parent each chooses
// (the disk, tmpfs) and removed with everything in it when the object goes away. The test
// suite has its own (tests/support/scratch_dir.h), bound to gtest and /tmp.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ae::bench {

class BenchDir {
 public:
  // `prefix`: the directory's path without its random suffix, e.g. "/var/tmp/ae-bench-walk".
  explicit BenchDir(const std::string& prefix) {
    std::string tmpl = prefix + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~BenchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;

  // Empty when the directory could not be made.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ae::bench
