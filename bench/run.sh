#!/usr/bin/env bash
# `make bench`: micro-benchmarks (Google Benchmark), then bench/compare.py's whole-process
# comparisons with the peer, `codex exec`, on the same loopback test model server and the same
# scripted turns, measured side by side in one run and printed as one table (also
# $build/bench-results/compare.json). The machine is shared and noisy: read the ratios, not the
# absolute times. Nothing here asserts, and nothing leaves loopback but the one-time npm install.
set -euo pipefail

build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/$build/agentexec"
out="$root/$build/bench-results"
mkdir -p "$out"
export PATH="/usr/local/bin:/usr/bin:/bin"

echo "== micro-benchmarks ($build/bench/agentexec_bench)"
"$root/$build/bench/agentexec_bench" --benchmark_min_time=0.2 \
  --benchmark_out="$out/micro.json" --benchmark_out_format=json | tee "$out/micro.txt"

# The peer: codex 0.169.0 from the npm registry, installed once under the build directory
# (CODEX_BIN=/path/to/codex uses another copy). The package's native binary is measured, not
# its node launcher (bin/codex.js), which only finds and execs that binary.
codex_version=0.169.0
peer="$root/$build/peer"
codex=${CODEX_BIN:-}
codex_skip=""
native() {
  find "$peer/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f 2>/dev/null | head -1 || true
}
if [ -z "$codex" ]; then
  if [ -z "$(native)" ] || ! grep -q "\"version\": \"$codex_version\"" \
      "$peer/node_modules/@openai/codex/package.json" 2>/dev/null; then
    if ! command -v npm >/dev/null 2>&1; then
      codex_skip="codex skipped: npm is not installed"
    else
      echo "== installing the peer (@openai/codex@$codex_version) under $build/peer"
      mkdir -p "$peer"
      if ! npm_err=$(npm install --prefix "$peer" --no-audit --no-fund --loglevel=error \
          "@openai/codex@$codex_version" 2>&1 >/dev/null); then
        codex_skip="codex skipped: npm install failed ($(echo "$npm_err" | grep -m1 -i 'err' | cut -c1-80))"
      fi
    fi
  fi
  [ -z "$codex_skip" ] && codex=$(native)
  [ -z "$codex_skip" ] && [ -z "$codex" ] && codex_skip="codex skipped: no native binary for $(uname -m) in the npm package"
fi
[ -n "$codex_skip" ] && echo "note: $codex_skip; whole-process figures are agentexec only"

echo
echo "== whole process: agentexec vs codex exec, loopback model server (bench/compare.py)"
args=(--agentexec "$bin" --out "$out" --runs "${BENCH_RUNS:-5}" --rows "${BENCH_ROWS:-1,2,3,4,5,6}")
if [ -n "$codex" ]; then
  args+=(--codex "$codex" --codex-version "$("$codex" --version 2>/dev/null | head -1)")
else
  args+=(--codex-skip "$codex_skip")
fi
python3 "$root/bench/compare.py" "${args[@]}" | tee "$out/compare.txt"

# The egress proxy against the direct path and the peer sandbox, srt
# (@anthropic-ai/sandbox-runtime, installed once under the build directory like codex; it needs
# Debian's bubblewrap, socat and ripgrep: install-deps.sh bench). SRT_BIN=/path/to/srt
# measures another copy.
srt_version=0.0.78
srt=${SRT_BIN:-}
if [ -z "$srt" ]; then
  srt="$root/$build/peer-srt/node_modules/.bin/srt"
  if [ ! -x "$srt" ] && command -v npm >/dev/null 2>&1; then
    echo "== installing the peer sandbox (@anthropic-ai/sandbox-runtime@$srt_version) under $build/peer-srt"
    npm install --prefix "$root/$build/peer-srt" --no-audit --no-fund --loglevel=error \
      "@anthropic-ai/sandbox-runtime@$srt_version" >/dev/null 2>&1 || true
  fi
  [ -x "$srt" ] || { echo "note: srt skipped (npm install failed or npm missing)"; srt=""; }
fi
echo
echo "== the egress proxy: direct vs agentexec's proxy vs srt (bench/net_compare.py)"
python3 "$root/bench/net_compare.py" "$bin" "$srt" "--runs=${BENCH_RUNS:-5}" | tee "$out/net_compare.txt"
echo
echo "== the credential broker: an opaque tunnel vs a terminated one (bench/broker_compare.py)"
python3 "$root/bench/broker_compare.py" "$bin" "--runs=${BENCH_RUNS:-5}" | tee "$out/broker_compare.txt"
