#!/usr/bin/env bash
# Real engines, outside `make test`: agentexec against MCP servers built with the official
# TypeScript SDK from npm (streamable HTTP with event-stream and JSON replies, and stdio),
# `agentexec batch` sharded by gitlab-ci-local's `parallel:` and a Slurm job array, a first
# pipeline step (the GitLab component in gitlab-ci-local's shell executor, the Action's steps),
# the image on the real Docker daemon (tests/engines/docker.sh), and real package and VCS
# clients through the network allow-list (tests/engines/net_clients_test.py), and codex's own
# exec tests against the real codex (tests/peer).
# Each case prints PASS/FAIL/SKIP with the reason; the last line is the tally.
#   tests/engines/run.sh [BUILD_DIR]     (make test-engines)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
bin=$build/agentexec
pass=0 fail=0 skip=0
result() {  # result PASS|FAIL|SKIP name [why]
  echo "$1 $2${3:+: $3}"
  case $1 in PASS) pass=$((pass + 1)) ;; FAIL) fail=$((fail + 1)) ;; SKIP) skip=$((skip + 1)) ;; esac
}
[ -x "$bin" ] || { echo "no agentexec at $bin: build it first (make)" >&2; exit 2; }

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT

# The SDK, pinned, in a cache beside the build (npm is the only way it comes).
. "$root/tests/engines/npm_install.sh"
sdk=$build/engines/mcp-sdk
if [ ! -d "$sdk/node_modules/@modelcontextprotocol/sdk" ]; then
  sdk_missing=$(npm_install "$sdk" "$work/npm.log" @modelcontextprotocol/sdk@1.32.2 zod@3)
fi
# ES modules resolve packages from the script's own folder (NODE_PATH does not apply), so the
# server runs from a copy beside the SDK's node_modules.
cp "$root/tests/engines/mcp_sdk_server.mjs" "$sdk/server.mjs"
server=$sdk/server.mjs

git -C "$work" init -q repo
mkdir -p "$work/home"
cat >"$work/turns.json" <<'JSON'
{"turns":[
  {"items":[{"type":"function_call","name":"mcp__sdk__add","arguments":"{\"a\":2,\"b\":3}","call_id":"c1"}]},
  {"items":[{"type":"message","text":"5"}]}]}
JSON
expect='"type":"item.completed","item":{"id":"item_0","type":"mcp_tool_call","server":"sdk","tool":"add","arguments":{"a":2,"b":3},"result":{"content":[{"type":"text","text":"5"}],"structured_content":null},"error":null,"status":"completed"}'

run_case() {  # run_case NAME CONFIG [ENV=VALUE...]
  local name=$1 config=$2
  shift 2
  printf '%s\n' "$config" >"$work/home/config.toml"
  (cd "$work/repo" && env AGENTEXEC_HOME="$work/home" "$@" "$bin" --json -c model_provider=scripted \
    -c "model_providers.scripted.script=\"$work/turns.json\"" "add" </dev/null \
    >"$work/$name.out" 2>"$work/$name.err")
  local code=$?
  if [ $code -eq 0 ] && grep -qF "$expect" "$work/$name.out" && ! grep -q s3cret "$work/$name.out"; then
    result PASS "$name"
  else
    result FAIL "$name" "exit $code; stdout: $(head -c 2000 "$work/$name.out"); stderr: $(tail -c 500 "$work/$name.err")"
  fi
}

start_http() {  # start_http NAME [server args...]: sets $url
  local name=$1
  shift
  rm -f "$work/$name.port"
  node "$server" --port-file "$work/$name.port" "$@" \
    >"$work/$name.server.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do [ -s "$work/$name.port" ] && break; sleep 0.1; done
  url="http://127.0.0.1:$(cat "$work/$name.port" 2>/dev/null)/mcp"
}

if [ -n "${sdk_missing:-}" ]; then
  for c in mcp_sdk_http_sse mcp_sdk_http_json mcp_sdk_stdio; do result SKIP "$c" "$sdk_missing"; done
elif ! command -v node >/dev/null; then
  for c in mcp_sdk_http_sse mcp_sdk_http_json mcp_sdk_stdio; do result SKIP "$c" "node is not installed"; done
else
  start_http sse --token s3cret
  run_case mcp_sdk_http_sse "$(printf '[mcp_servers.sdk]\nurl = "%s"\nbearer_token_env_var = "SDK_TOKEN"\nrequired = true\n' "$url")" SDK_TOKEN=s3cret
  start_http json --json-response
  run_case mcp_sdk_http_json "$(printf '[mcp_servers.sdk]\nurl = "%s"\nrequired = true\n' "$url")"
  run_case mcp_sdk_stdio "$(printf '[mcp_servers.sdk]\ncommand = "node"\nargs = ["%s", "--stdio"]\nrequired = true\n' "$server")"
fi

# `agentexec batch` sharded by real engines; each merged report must equal the unsharded one.
. "$root/tests/engines/batch_common.sh"
. "$root/tests/engines/batch_github.sh"
. "$root/tests/engines/batch_gitlab.sh"
. "$root/tests/engines/batch_kubernetes.sh"
. "$root/tests/engines/batch_slurm.sh"
. "$root/tests/engines/pipelines.sh"
. "$root/tests/engines/docker.sh"  # the image on the real Docker daemon

# Real package and VCS clients (git, pip, npm against verdaccio, ssh) through the network
# allow-list, in namespaces the test makes itself; one verdict a case, tab-separated.
nc_tally=$work/net_clients.tally
python3 "$root/tests/engines/net_clients_test.py" "$bin" --tally "$nc_tally" \
  >"$work/net_clients.log" 2>&1
if [ -s "$nc_tally" ]; then
  while IFS=$'\t' read -r verdict name why; do result "$verdict" "$name" "$why"; done <"$nc_tally"
  grep -q '^FAIL' "$nc_tally" && sed -n '/^=====/,/^Ran /p' "$work/net_clients.log" >&2
else
  result FAIL net_clients "no verdicts: $(tail -c 600 "$work/net_clients.log")"
fi

# codex's own exec tests (tests/peer), run against the real codex: the port must hold for the
# peer it came from. CODEX_BIN names a codex; else the copy the peer suite was checked with.
codex_bin=${CODEX_BIN:-/tmp/codex171/node_modules/.bin/codex}
python3 "$root/tests/peer/peer_test.py" "$codex_bin" >"$work/peer_codex.log" 2>&1
case $? in
  0) result PASS peer_suite_codex "$(tail -n1 "$work/peer_codex.log")" ;;
  77) result SKIP peer_suite_codex "codex is not installed ($(head -n1 "$work/peer_codex.log"); npm install --prefix /tmp/codex171 @openai/codex@0.171.0, or CODEX_BIN=PATH)" ;;
  *) result FAIL peer_suite_codex "$(grep -E '^(FAIL|peer:)' "$work/peer_codex.log" | head -c 2000)" ;;
esac

echo "engines: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
