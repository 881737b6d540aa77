#!/usr/bin/env bash
# Installs the Debian 12 packages agentexec needs, by purpose:
#   install-deps.sh [build]   building the product only (what a CI job that builds needs)
#   install-deps.sh test      + the test suite's libraries and tools (make test runs this)
#   install-deps.sh bench     + the benchmarks' libraries and tools (make bench runs this)
#   install-deps.sh dist      + what `make dist` needs for the static binary
#   install-deps.sh dist-aarch64  + the cross toolchain and arm64 archives for
#                             `make dist ARCH=aarch64`, and qemu-user to run the result
#   install-deps.sh all       everything
# Idempotent and quiet when everything is present; needs root (or sudo) only when something
# is missing.
set -euo pipefail

build=(
  build-essential cmake pkg-config git
  rapidjson-dev libtomlplusplus-dev libfmt-dev libseccomp-dev libcurl4-openssl-dev
  libcli11-dev
)
# Tests: GoogleTest, the loopback model/MCP servers (python3), the CI-step tests (jq,
# python3-yaml for tests/dist/gha.py and gitlab.py, procps), python3-jsonschema (the SARIF log
# checked against the published schema, tests/review),
# and node + npm for the YAML validators (tests/dist; they skip when npm cannot reach the
# registry). A node that is already installed (e.g. from NodeSource, which bundles npm) is
# kept: Debian's npm package would conflict with it.
test=(libgtest-dev libgmock-dev jq python3 python3-yaml python3-jsonschema procps
  clang libclang-rt-14-dev  # clang: make test-asan, make fuzz (libFuzzer)
  clang-format clang-tidy   # tests/lint: the format check and clang-tidy (scripts/lint.py)
  lintian                   # tests/dist/package_test.py: the .deb has no lintian error
  man-db)                   # tests/dist/manpage_test.py: agentexec.1 renders, no warning
command -v npm >/dev/null || test+=(nodejs npm)
bench=(libbenchmark-dev jq python3 procps)
# make dist: static OpenSSL/zlib/c-ares archives and dpkg-dev (dpkg-source, to unpack
# Debian's curl source for scripts/build-static-curl.sh), ca-certificates for the fetch.
dist=(libssl-dev zlib1g-dev libc-ares-dev dpkg-dev ca-certificates)
# make dist ARCH=aarch64 on an x86_64 host: Debian's cross compiler plus the target's static
# archives from the arm64 foreign architecture (multiarch); qemu-user runs the result in
# tests (dist_portable_aarch64) and in the release workflow's smoke run.
dist_aarch64=(g++-aarch64-linux-gnu libssl-dev:arm64 zlib1g-dev:arm64 libc-ares-dev:arm64
  libseccomp-dev:arm64 qemu-user-static)
foreign=""

packages=("${build[@]}")
for what in "${@:-build}"; do
  case "$what" in
    build) ;;
    test) packages+=("${test[@]}") ;;
    bench) packages+=("${bench[@]}") ;;
    dist) packages+=("${dist[@]}") ;;
    dist-aarch64) packages+=("${dist[@]}" "${dist_aarch64[@]}") foreign=arm64 ;;
    all) packages+=("${test[@]}" "${bench[@]}" "${dist[@]}") ;;
    *) echo "install-deps: unknown set '$what' (build, test, bench, dist, all)" >&2; exit 2 ;;
  esac
done

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
if [ -n "$foreign" ] && ! dpkg --print-foreign-architectures | grep -qx "$foreign"; then
  $sudo dpkg --add-architecture "$foreign"
fi
$sudo apt-get update -qq </dev/null >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >&2
