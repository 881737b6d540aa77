#!/usr/bin/env bash
# `make demo`: the main job, for real and offline. agentexec runs the built-in scripted
# provider (no network, no key) on a small git repository with a failing test: it reads
# the code, runs the tests, patches the bug under the workspace-write sandbox, reruns the
# tests, and answers. stdout is exactly the JSONL stream (pipe it to jq); the final message
# and the resulting diff go to stderr. The outcome is not the scripted model's word: after the
# run the demo runs the project's tests itself, outside agentexec, and fails loudly (exit 1)
# when they do not pass, whatever the final message said.
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
[ "$status" -eq 0 ] || exit "$status"

# The check: the project's tests, run here (no bytecode left in the repository).
echo >&2
echo "the demo's check (\$ python3 -m unittest, outside agentexec):" >&2
if ! check=$(python3 -B -m unittest 2>&1 </dev/null); then
  printf '%s\n' "$check" >&2
  echo "demo: FAILED: the project's tests do not pass after the run, whatever its final message says" >&2
  exit 1
fi
printf '%s\n' "$check" | tail -n 3 >&2
echo "demo: the project's tests pass" >&2
