#!/usr/bin/env bash
# Installs the Debian 12 packages agentexec builds and tests with. Idempotent and quiet
# when everything is present; needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  rapidjson-dev libtomlplusplus-dev libfmt-dev libseccomp-dev libcurl4-openssl-dev
  libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  jq python3 procps time hyperfine
)
# Tests only: `make test` also builds the suite with clang under ASan+UBSan and the
# libFuzzer harnesses (make test-asan, make fuzz).
packages+=(clang libclang-rt-14-dev)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq </dev/null >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >&2
