#!/usr/bin/env bash
# The cache key of a source build of the action: the OS, the architecture and a hash of
# every tracked source file of the action's checkout (hashFiles() cannot see outside the
# workspace, where a composite action lives).
set -euo pipefail
cd "${ACTION_PATH:?}"
hash=$(find . -path ./build -prune -o -path ./.git -prune -o -type f \
  \( -name '*.cc' -o -name '*.h' -o -name 'CMakeLists.txt' -o -name '*.cmake' \) -print0 |
  LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
key="agentexec-build-$(uname -s)-$(uname -m)-$hash"
echo "key=$key" >>"${GITHUB_OUTPUT:?}"
