#!/usr/bin/env bash
# Puts agentexec on the PATH of a CI job; prints nothing on stdout. AGENTEXEC_VERSION is
#   latest | X.Y.Z   the release tarball of ACTION_REPOSITORY (GitHub), checked against its
#                    .sha256; AGENTEXEC_DOWNLOAD_BASE overrides where releases are fetched
#                    from (a mirror, or file:///... in tests). When GitHub has no release of
#                    ACTION_REPOSITORY at all (a fork, or before the first tag), latest
#                    builds from source instead, with a warning.
#   source           built from ACTION_PATH (the action's own checkout) with `make`, into
#                    AGENTEXEC_BUILD_DIR (default ACTION_PATH/build, what the action caches)
# Sets the output `bin` (GITHUB_OUTPUT) and adds its directory to GITHUB_PATH when those
# exist; the binary goes to $AGENTEXEC_INSTALL_DIR (default $RUNNER_TOOL_CACHE/agentexec/VER,
# else ~/.local/bin). Prints nothing on stdout but workflow commands (::warning::).
set -euo pipefail
version=${AGENTEXEC_VERSION:-latest}
action_path=${ACTION_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
arch=$(uname -m)
case "$arch" in x86_64 | aarch64) ;; *) echo "agentexec: no release for $arch; use version: source" >&2; exit 1 ;; esac

publish() {  # $1 = the installed binary
  "$1" --version >&2
  if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "bin=$1" >>"$GITHUB_OUTPUT"; fi
  if [ -n "${GITHUB_PATH:-}" ]; then dirname "$1" >>"$GITHUB_PATH"; fi
}

build_from_source() {
  local dir=${AGENTEXEC_BUILD_DIR:-$action_path/build}
  make -C "$action_path" BUILD="$dir" >&2
  publish "$dir/agentexec"
  exit 0
}

if [ "$version" = source ]; then build_from_source; fi

base=${AGENTEXEC_DOWNLOAD_BASE:-}
if [ -z "$base" ]; then
  repo=${ACTION_REPOSITORY:-}
  [ -n "$repo" ] || { echo "agentexec: no release repository known (a local action?); use version: source" >&2; exit 1; }
  # The releases .github/workflows/release.yml publishes, on the server the job runs
  # against (GITHUB_SERVER_URL: github.com, or a GitHub Enterprise Server).
  server=${GITHUB_SERVER_URL:-https://github.com}
  if [ "$version" = latest ]; then
    # The release page redirects to .../tag/vX.Y.Z.
    tag=$(curl -fsSLI -o /dev/null -w '%{url_effective}' "$server/$repo/releases/latest") || tag=""
    tag=${tag##*/}
    if [[ "$tag" != v* ]]; then
      # Nothing published yet: the job still gets agentexec, from the checkout it already
      # has, rather than failing on the user's first try. Only `latest` falls back; a version
      # that is not published fails below.
      echo "::warning::agentexec: no release found in $repo; building it from the action's checkout (version: source caches that build)"
      build_from_source
    fi
    version=${tag#v}
  fi
  base="$server/$repo/releases/download/v$version"
elif [ "$version" = latest ]; then
  version=$(curl -fsSL "$base/latest")  # a mirror names its latest version in a file
fi

name="agentexec-$version-linux-$arch"
dir=${AGENTEXEC_INSTALL_DIR:-${RUNNER_TOOL_CACHE:+$RUNNER_TOOL_CACHE/agentexec/$version/$arch}}
dir=${dir:-$HOME/.local/bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "agentexec: fetching $base/$name.tar.gz" >&2
curl -fsSL --retry 3 -o "$tmp/$name.tar.gz" "$base/$name.tar.gz"
curl -fsSL --retry 3 -o "$tmp/$name.tar.gz.sha256" "$base/$name.tar.gz.sha256"
(cd "$tmp" && sha256sum -c --quiet "$name.tar.gz.sha256") >&2 ||
  { echo "agentexec: checksum mismatch for $name.tar.gz" >&2; exit 1; }
tar -xzf "$tmp/$name.tar.gz" -C "$tmp"
mkdir -p "$dir"
install -m 0755 "$tmp/$name/agentexec" "$dir/agentexec"
publish "$dir/agentexec"
