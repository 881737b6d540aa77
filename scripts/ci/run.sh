#!/usr/bin/env bash
# Runs agentexec as a CI step: the GitHub Action (action.yml) and the GitLab component
# (templates/agentexec.yml) both call this. Inputs come as INPUT_* environment variables
# (never spliced into shell code). It writes, into $AGENTEXEC_OUT_DIR (default a fresh
# directory under $RUNNER_TEMP or /tmp):
#   events.jsonl        the --json stream
#   final-message.md    the last agent message (-o)
#   summary.md          the Markdown summary (scripts/summarize-events.sh)
#   exit-code           agentexec's exit code
#   changes.patch       what the run changed in the git work tree (git apply-able; binary
#                       safe; new files included), when the working directory is in git
# With GITHUB_OUTPUT set it adds the outputs final-message, events-file, exit-code,
# thread-id and out-dir; with GITHUB_STEP_SUMMARY set it appends the summary there. Then it
# exits with agentexec's exit code, so a failed run fails the step.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${AGENTEXEC_BIN:-agentexec}

die() { echo "agentexec step: $*" >&2; exit 2; }
[ -n "${INPUT_PROMPT:-}" ] && [ -n "${INPUT_PROMPT_FILE:-}" ] && die "give prompt or prompt-file, not both"
[ -z "${INPUT_PROMPT:-}" ] && [ -z "${INPUT_PROMPT_FILE:-}" ] && die "no prompt: set the prompt or prompt-file input"

out=${AGENTEXEC_OUT_DIR:-}
if [ -z "$out" ]; then
  out=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/agentexec-XXXXXX")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
events="$out/events.jsonl"

args=(--json -o "$out/final-message.md")
[ -n "${INPUT_SANDBOX:-}" ] && args+=(-s "$INPUT_SANDBOX")
[ -n "${INPUT_APPROVAL:-}" ] && args+=(-a "$INPUT_APPROVAL")
[ -n "${INPUT_MODEL:-}" ] && args+=(-m "$INPUT_MODEL")
[ -n "${INPUT_MAX_TURNS:-}" ] && args+=(--max-turns "$INPUT_MAX_TURNS")
[ -n "${INPUT_TIMEOUT:-}" ] && args+=(--timeout "$INPUT_TIMEOUT")
if [ -n "${INPUT_OUTPUT_SCHEMA:-}" ]; then
  schema=$INPUT_OUTPUT_SCHEMA
  if [[ "$schema" =~ ^[[:space:]]*\{ ]]; then  # inline JSON
    printf '%s' "$schema" >"$out/output-schema.json"
    schema="$out/output-schema.json"
  fi
  args+=(--output-schema "$schema")
fi
if [ -n "${INPUT_ARGS:-}" ]; then
  # Split like a shell, quotes honoured, nothing expanded or executed (xargs, not eval).
  split=$(printf '%s' "$INPUT_ARGS" | xargs -n1 printf '%s\n') ||
    die "args: cannot split (unbalanced quotes?): $INPUT_ARGS"
  mapfile -t extra <<<"$split"
  args+=("${extra[@]}")
fi
# The key goes to AGENTEXEC_API_KEY, which agentexec prefers over OPENAI_API_KEY; commands the
# model runs never see it (variables named *KEY* are dropped from their environment).
[ -n "${INPUT_API_KEY:-}" ] && export AGENTEXEC_API_KEY="$INPUT_API_KEY"
[ -n "${INPUT_BASE_URL:-}" ] && export OPENAI_BASE_URL="$INPUT_BASE_URL"

code=0
if [ -n "${INPUT_PROMPT_FILE:-}" ]; then
  [ -r "$INPUT_PROMPT_FILE" ] || die "prompt-file not readable: $INPUT_PROMPT_FILE"
  "$bin" "${args[@]}" - <"$INPUT_PROMPT_FILE" >"$events" || code=$?
else
  "$bin" "${args[@]}" -- "$INPUT_PROMPT" </dev/null >"$events" || code=$?
fi
echo "$code" >"$out/exit-code"

# The change as a patch, through a scratch index so the job's own index is left alone.
if top=$(git rev-parse --show-toplevel 2>/dev/null) && git rev-parse -q --verify HEAD >/dev/null; then
  index=$(mktemp)
  exclude=()  # our own output directory, when it lies inside the work tree (GitLab)
  rel=$(realpath --relative-to="$top" "$out")
  [[ "$rel" != ../* ]] && exclude=(":(top,exclude)$rel")
  (export GIT_INDEX_FILE="$index"
   git -C "$top" read-tree HEAD && git -C "$top" add -A -- ":/" "${exclude[@]}" &&
     git -C "$top" diff --cached --binary HEAD >"$out/changes.patch") ||
    echo "agentexec step: could not write changes.patch" >&2
  rm -f "$index"
fi

# A summary that cannot be made must not hide agentexec's own exit code.
"$here/../summarize-events.sh" markdown "$events" >"$out/summary.md" ||
  echo "### agentexec: no summary (see $events)" >"$out/summary.md"
if [ "$code" -ne 0 ]; then
  printf '\n_agentexec exited with code %s_ (0 done, 1 model/API failure, 2 usage/config, 3 sandbox unavailable, 4 limit reached, 5 output not writable)\n' \
    "$code" >>"$out/summary.md"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$out/summary.md" >>"$GITHUB_STEP_SUMMARY"; fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  final=$("$here/../summarize-events.sh" final-message "$events"; echo x)
  final=${final%x}
  delim="agentexec_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  {
    echo "exit-code=$code"
    echo "events-file=$events"
    echo "out-dir=$out"
    echo "thread-id=$("$here/../summarize-events.sh" thread-id "$events")"
    printf 'final-message<<%s\n%s\n%s\n' "$delim" "$final" "$delim"
  } >>"$GITHUB_OUTPUT"
fi
echo "agentexec step: exit code $code; events in $events" >&2
exit "$code"
