#!/usr/bin/env bash
# Dry-run a pipeline step without a key or network: the scripted provider replays model
# turns from a file, so the rest of the job (jq filters, artifacts, exit-code handling)
# can be tested for real.  Usage: ci-examples/dry-run.sh TURNS.json "prompt"
set -euo pipefail
turns=$(realpath "$1")
shift
agentexec --json -s workspace-write \
  -c model_provider=scripted -c "model_providers.scripted.script=\"$turns\"" \
  "$@" | jq -c 'select(.type | startswith("item.") or . == "turn.completed" or . == "turn.failed")'
