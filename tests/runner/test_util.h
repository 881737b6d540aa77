// Shared by the runner tests: temporary directories, files, and a fake environment.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "config/session_config.h"
#include "tests/support/scratch_dir.h"

namespace ae::testing {

// A scratch directory removed with its contents at the end of the test.
using TempDir = test::ScratchDir;

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
