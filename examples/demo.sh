#!/usr/bin/env bash
# `make demo`: the main job, for real and offline. agentexec runs the built-in scripted
# provider (no network, no key) on a small git repository with a failing test: it reads
# the code, runs the tests, patches the bug under the workspace-write sandbox, reruns the
# tests, and answers. stdout is exactly the JSONL stream (pipe it to jq); the final message
# and the resulting diff go to stderr.
set -euo pipefail

bin=$(realpath "${1:-build/agentexec}")
root=$(cd "$(dirname "$0")/.." && pwd)
work="$root/.demo"

rm -rf "$work"
mkdir -p "$work/home"
cp -r "$root/examples/demo/project" "$work/repo"
git -C "$work/repo" init -q
git -C "$work/repo" add -A
git -C "$work/repo" -c user.name=demo -c user.email=demo@example.invalid commit -qm "calc with a bug"

export AGENTEXEC_HOME="$work/home"
cd "$work/repo"

echo "\$ agentexec --json -s workspace-write -c model_provider=scripted ... \"make the failing test pass\"" >&2
status=0
"$bin" --json -s workspace-write \
  -c model_provider=scripted \
  -c "model_providers.scripted.script=\"$root/examples/demo/turns.json\"" \
  -o "$work/last-message.txt" \
  "make the failing test pass" </dev/null >"$work/events.jsonl" || status=$?

# Every stdout line must be one JSON object; jq -c re-prints each as it parsed it.
jq -c . "$work/events.jsonl"
echo >&2
echo "exit code: $status" >&2
echo "final message (-o $work/last-message.txt):" >&2
cat "$work/last-message.txt" >&2
echo >&2
echo >&2
echo "what changed in the repository:" >&2
git --no-pager diff --stat >&2
exit "$status"
