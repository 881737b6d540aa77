// Shared by the runner tests: temporary directories, files, and a fake environment.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "runner/session_config.h"

namespace ae::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ae-runner-test-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    EXPECT_NE(made, nullptr);
    // Canonical, so it compares equal to realpath() results.
    path_ = std::filesystem::canonical(made ? made : "/tmp").string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

inline void WriteFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << content;
}

inline void MakeDir(const std::string& path) {
  std::filesystem::create_directories(path);
}

// An Environment whose variables are exactly `vars`.
inline Environment FakeEnvironment(std::map<std::string, std::string> vars, std::string cwd) {
  Environment env;
  env.getenv = [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  env.cwd = std::move(cwd);
  return env;
}

}  // namespace ae::testing
