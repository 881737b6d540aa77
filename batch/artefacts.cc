#include "batch/artefacts.h"

namespace ae {

std::vector<std::string> ArtefactExcludeArgs() {
  std::vector<std::string> args;
  std::string_view text = ArtefactsGitignore();
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.empty() || line.front() == '#') continue;
    args.push_back("--exclude=" + std::string(line));
  }
  return args;
}

}  // namespace ae
