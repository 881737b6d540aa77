#!/usr/bin/env bash
# ctest driver: install the pinned SDK (npm registry), start the loopback test model server
# (strict: it refuses any request the real Responses API would refuse, e.g. reasoning replayed
# without its encrypted content), and let the SDK drive the real binary through a multi-turn
# thread with reasoning and tool calls. Exit 77 (skipped) where npm or node is unavailable.
set -euo pipefail
bin=$1 src=$2 work=$3
command -v node >/dev/null && command -v npm >/dev/null || { echo "SKIP: node/npm not installed"; exit 77; }
mkdir -p "$work"
cp "$src/tests/sdk/package.json" "$src/tests/sdk/drive_with_sdk.mjs" "$work/"
if [ ! -d "$work/node_modules/@openai/codex-sdk" ]; then
  (cd "$work" && npm install --silent --no-audit --no-fund >/dev/null 2>&1) ||
    { echo "SKIP: could not install @openai/codex-sdk from the npm registry"; exit 77; }
fi
tmp=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$tmp"' EXIT
cat >"$tmp/turns.json" <<'JSON'
{"turns":[
 {"items":[{"type":"reasoning","summary":["Checking the tree"]},
           {"type":"function_call","name":"exec_command","arguments":{"cmd":"echo hi from the sandbox"}}],
  "usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":5}},
 {"items":[{"type":"reasoning","summary":["It worked"]},{"type":"message","text":"All done."}],
  "usage":{"input_tokens":120,"cached_input_tokens":20,"output_tokens":6}},
 {"items":[{"type":"reasoning","summary":["Once more"]},
           {"type":"function_call","name":"exec_command","arguments":{"cmd":"echo again"}}],
  "usage":{"input_tokens":200,"cached_input_tokens":30,"output_tokens":7}},
 {"items":[{"type":"message","text":"Second turn."}],"usage":{"input_tokens":210,"cached_input_tokens":40,"output_tokens":8}},
 {"fail":"simulated outage"}
]}
JSON
python3 "$src/tests/support/model_server.py" --script "$tmp/turns.json" --port-file "$tmp/port" \
  --max-seconds 120 &
server=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
mkdir -p "$tmp/repo" && git -C "$tmp/repo" init -q
# The SDK's item sequence is what is checked, so /tmp is not a writable root here: on a machine
# whose /tmp is large, the nested-repository scan of /tmp stops at its bound and adds a
# warning item (correctly, but that is the sandbox suite's business, not the SDK's).
mkdir -p "$tmp/home"
printf '[sandbox_workspace_write]\nexclude_slash_tmp = true\n' >"$tmp/home/config.toml"
cd "$work"
env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$tmp" AGENTEXEC_HOME="$tmp/home" LANG=C.UTF-8 \
  node drive_with_sdk.mjs "$bin" "$tmp/repo" "$(cat "$tmp/port")"
