#!/usr/bin/env bash
# Publishes the Docker image the GitLab component runs by default (templates/agentexec.yml:
# ghcr.io/OWNER/agentexec:X.Y.Z); .github/workflows/release.yml runs it after every
# architecture was built and tested. Usage:
#   publish-image.sh build TAG ARCH   on an ARCH runner: build the Dockerfile (the same
#                                     `make dist` as the release), check that the image's
#                                     agentexec is this version and commit, push IMAGE:X.Y.Z-ARCH
#   publish-image.sh manifest TAG     IMAGE:X.Y.Z and IMAGE:latest name every architecture
# TAG must be v<the version in CMakeLists.txt>. IMAGE is ghcr.io/<GITHUB_REPOSITORY in lower
# case, as registry names must be>; the push logs in as REGISTRY_USER with REGISTRY_TOKEN.
set -euo pipefail
usage="usage: publish-image.sh build TAG ARCH | manifest TAG"
cmd=${1:?$usage}
tag=${2:?$usage}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
arches=(x86_64 aarch64)  # = publish-release.sh's = release.yml's image matrix (tests/dist)

fail() { echo "publish-image: $*" >&2; exit 1; }
version=$(make -s -C "$root" version)
[ "$tag" = "v$version" ] || fail "tag $tag is not v$version (CMakeLists.txt)"
repo=${GITHUB_REPOSITORY:?publish-image: GITHUB_REPOSITORY is not set}
image="ghcr.io/${repo,,}"

login() {
  printf '%s' "${REGISTRY_TOKEN:?publish-image: REGISTRY_TOKEN is not set}" |
    docker login ghcr.io -u "${REGISTRY_USER:?publish-image: REGISTRY_USER is not set}" \
      --password-stdin >&2
}

case "$cmd" in
  build)
    arch=${3:?$usage}
    [[ " ${arches[*]} " == *" $arch "* ]] || fail "no image for $arch (only ${arches[*]})"
    # Each architecture builds natively: under emulation the static build takes an hour.
    [ "$(uname -m)" = "$arch" ] || fail "the $arch image is built on an $arch runner, not $(uname -m)"
    commit=$(git -C "$root" rev-parse --short=12 HEAD)
    docker build --build-arg AGENTEXEC_COMMIT="$commit" -t "$image:$version-$arch" "$root"
    said=$(docker run --rm "$image:$version-$arch" --version)
    [ "$said" = "agentexec $version ($commit)" ] ||
      fail "the image's agentexec says '$said', not 'agentexec $version ($commit)'; not pushing"
    login
    docker push "$image:$version-$arch"
    echo "publish-image: $image:$version-$arch" >&2
    ;;
  manifest)
    login
    docker buildx imagetools create -t "$image:$version" -t "$image:latest" \
      "${arches[@]/#/$image:$version-}"
    echo "publish-image: $image:$version and :latest (${arches[*]})" >&2
    ;;
  *) fail "$usage" ;;
esac
