#!/usr/bin/env bash
# `make bench`: micro-benchmarks (Google Benchmark) and whole-process comparisons with the
# peer, `codex exec`, on the same loopback test model server and the same scripted turns,
# measured side by side in one run. The machine is shared and noisy: read the ratios, not
# the absolute times. Nothing here leaves loopback.
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

# The peer: the codex CLI from the npm registry, installed once under the build directory.
codex=""
if command -v codex >/dev/null 2>&1; then
  codex=$(command -v codex)
elif [ -x "$root/$build/peer/node_modules/.bin/codex" ]; then
  codex="$root/$build/peer/node_modules/.bin/codex"
elif command -v npm >/dev/null 2>&1; then
  echo "== installing the peer (@openai/codex) under $build/peer"
  if npm install --silent --prefix "$root/$build/peer" @openai/codex >/dev/null 2>&1; then
    codex="$root/$build/peer/node_modules/.bin/codex"
  fi
fi
[ -n "$codex" ] || echo "note: codex not available; whole-process figures are agentexec only"

work=$(mktemp -d /var/tmp/ae-bench-XXXXXX)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# One run = two requests: a command, then the answer. Enough turns for every run below.
runs=10
python3 - "$work/turns.json" $((4 * (runs + 3) + 8)) <<'PY'
import json, sys
path, pairs = sys.argv[1], int(sys.argv[2])
usage = {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 50}
turns = []
for _ in range(pairs):
    turns.append({"items": [{"type": "function_call", "name": "exec_command",
                             "arguments": {"cmd": "git status --short | wc -l"}}], "usage": usage})
    turns.append({"items": [{"type": "message", "text": "The tree is clean."}], "usage": usage})
json.dump({"turns": turns}, open(path, "w"))
PY

python3 "$root/tests/support/model_server.py" --script "$work/turns.json" \
  --port-file "$work/port" --max-seconds 900 &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

mkdir -p "$work/repo" "$work/ae-home" "$work/codex-home"
git -C "$work/repo" init -q
echo "hello" >"$work/repo/README.md"
git -C "$work/repo" add -A
git -C "$work/repo" -c user.name=b -c user.email=b@example.invalid commit -qm init

provider_toml() {
  cat <<TOML
model = "gpt-5.5"
model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:$port/v1"
env_key = "MOCK_KEY"
wire_api = "responses"
TOML
}
provider_toml >"$work/ae-home/config.toml"
provider_toml >"$work/codex-home/config.toml"
export MOCK_KEY=test-bench-key
export AGENTEXEC_HOME="$work/ae-home"
export CODEX_HOME="$work/codex-home"
cd "$work/repo"

ae_cmd="$bin --json -s workspace-write --ephemeral 'is the tree clean?' >/dev/null"
cx_cmd="$codex exec --json -s workspace-write --ephemeral 'is the tree clean?' >/dev/null"

echo
echo "== whole process: start-up (--version)"
if [ -n "$codex" ]; then
  hyperfine -N --warmup 3 --runs 30 --export-json "$out/version.json" \
    "$bin --version" "$codex --version" | tee "$out/version.txt"
else
  hyperfine -N --warmup 3 --runs 30 "$bin --version" | tee "$out/version.txt"
fi

echo
echo "== whole process: one turn (a sandboxed command, then the answer) over loopback SSE"
if [ -n "$codex" ]; then
  hyperfine --warmup 1 --runs "$runs" --export-json "$out/turn.json" \
    -n agentexec "$ae_cmd" -n "codex exec" "$cx_cmd" | tee "$out/turn.txt"
else
  hyperfine --warmup 1 --runs "$runs" -n agentexec "$ae_cmd" | tee "$out/turn.txt"
fi

echo
echo "== whole process: peak memory of one turn (/usr/bin/time -v)"
rss() { /usr/bin/time -v bash -c "$1" 2>&1 >/dev/null | awk -F': ' '/Maximum resident/ {print $2}'; }
ae_rss=$(rss "$ae_cmd")
echo "agentexec   max RSS: ${ae_rss} KiB"
if [ -n "$codex" ]; then
  cx_rss=$(rss "$cx_cmd")
  echo "codex exec  max RSS: ${cx_rss} KiB"
  awk -v a="$ae_rss" -v c="$cx_rss" 'BEGIN { printf "ratio codex/agentexec: %.1fx\n", c / a }'
fi | tee "$out/rss.txt"
echo
echo "results: $out"
