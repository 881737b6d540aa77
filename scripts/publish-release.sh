#!/usr/bin/env bash
# Publishes the GitHub release the action's `version: latest` installs (.github/workflows/
# release.yml runs it after every architecture was built and tested). Usage:
#   publish-release.sh TAG DIR
# TAG must be v<the version in CMakeLists.txt>. DIR must hold, for every architecture
# scripts/ci/install.sh installs, agentexec-<version>-linux-<arch>.tar.gz and its .sha256
# (the names `make dist` writes and install.sh fetches), each checksum correct; .deb files
# in DIR are published too. The release is created with gh (GH_TOKEN, GH_REPO) on the
# existing tag and marked latest, so github.com/<repo>/releases/latest redirects to it.
set -euo pipefail
tag=${1:?usage: publish-release.sh TAG DIR}
dir=${2:?usage: publish-release.sh TAG DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
arches=(x86_64 aarch64)  # = install.sh's supported list = release.yml's matrix (tests/dist)

version=$(make -s -C "$root" version)
[ "$tag" = "v$version" ] || { echo "publish-release: tag $tag is not v$version (CMakeLists.txt)" >&2; exit 1; }

assets=()
for arch in "${arches[@]}"; do
  name="agentexec-$version-linux-$arch.tar.gz"
  for f in "$name" "$name.sha256"; do
    [ -f "$dir/$f" ] || { echo "publish-release: $dir/$f is missing; not publishing" >&2; exit 1; }
  done
  (cd "$dir" && sha256sum -c --quiet "$name.sha256") >&2 ||
    { echo "publish-release: checksum mismatch for $name; not publishing" >&2; exit 1; }
  assets+=("$dir/$name" "$dir/$name.sha256")
done
shopt -s nullglob
assets+=("$dir"/agentexec_"$version"_*.deb)

gh release create "$tag" --verify-tag --latest --title "agentexec $version" --generate-notes \
  "${assets[@]}"
echo "publish-release: $tag with ${#assets[@]} files" >&2
