// The presets of `network.allow`: one list per ecosystem CI needs, documented in docs/SANDBOX.md
// ("Network by allow-list") from this table. Each lists the hosts its tools fetch from by
// default, and nothing that accepts uploads beyond what the tool itself publishes to.
#include "net/policy.h"

namespace ae::net {

const std::vector<Preset>& Presets() {
  static const std::vector<Preset> presets = {
      {"@npm",
       "npm and Yarn registries",
       {"registry.npmjs.org", "registry.yarnpkg.com", "repo.yarnpkg.com", "nodejs.org"}},
      {"@pypi", "the Python Package Index", {"pypi.org", "files.pythonhosted.org"}},
      {"@crates",
       "crates.io (cargo)",
       {"crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org"}},
      {"@go",
       "the Go module proxy and checksum database",
       {"proxy.golang.org", "sum.golang.org", "storage.googleapis.com", "go.dev", "golang.org"}},
      {"@maven",
       "Maven Central and the Gradle plugin portal",
       {"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "services.gradle.org",
        "downloads.gradle.org"}},
      {"@rubygems", "RubyGems", {"rubygems.org", "index.rubygems.org"}},
      {"@debian",
       "Debian's archive (apt)",
       {"deb.debian.org", "security.debian.org", "debian.map.fastlydns.net"}},
      {"@github",
       "GitHub: git over https, the API, release and raw downloads",
       {"github.com", "api.github.com", "codeload.github.com", "objects.githubusercontent.com",
        "raw.githubusercontent.com", "release-assets.githubusercontent.com"}},
      {"@gitlab", "GitLab.com: git over https and the API", {"gitlab.com"}},
  };
  return presets;
}

}  // namespace ae::net
