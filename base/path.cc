#include "base/path.h"

#include <filesystem>

namespace ae {

std::string ResolvedPath(const std::string& base, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_relative()) p = std::filesystem::path(base) / p;
  std::string out = p.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace ae
