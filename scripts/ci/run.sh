#!/usr/bin/env bash
# Runs agentexec as a CI step: the GitHub Action (action.yml) and the GitLab component
# (templates/agentexec.yml) both call this. Inputs come as INPUT_* environment variables
# (never spliced into shell code). It writes, into a private directory (below):
#   events.jsonl        the JSONL event stream (--events-file: the job log gets the human
#                       progress on stderr and the final message on stdout, live)
#   final-message.md    the last agent message (-o)
#   summary.md          the Markdown summary (scripts/summarize-events.sh)
#   exit-code           agentexec's exit code
#   gl-code-quality-report.json, gl-sarif-report.sarif
#                       with INPUT_REVIEW=true (`agentexec review`, no prompt needed: the
#                       prompt, if any, adds review instructions): the review as a GitLab Code
#                       Quality report and a SARIF log; final-message.md is the Markdown
#   changes.patch       what the run changed in the git work tree (git apply-able; binary
#                       safe; new files included, but not the build artefacts and caches
#                       of artefacts.gitignore beside this script that no commit tracks),
#                       when the working directory is in git
# With AGENTEXEC_OUT_DIR set (the GitLab component: artifacts must lie in the project), the
# files are copied at the very end into that directory, which must not exist yet.
# With GITHUB_OUTPUT set it adds the outputs final-message, events-file, exit-code,
# thread-id and out-dir; with GITHUB_STEP_SUMMARY set it appends the summary there. Then it
# exits with agentexec's exit code, so a failed run fails the step.
#
# The commands the model runs may write to the working directory, /tmp and $TMPDIR (the
# writable roots of workspace-write), and this script runs unconfined after them: a file it
# wrote there could have been replaced by a symlink (to .git/hooks/pre-commit, to a file
# outside, to /proc/self/environ) and written or read through. So everything it writes or
# reads back after the run lives in a directory made fresh outside all of those.
set -euo pipefail
# The key's hand-off. /proc/PID/environ shows the environment a process started with (the
# bytes execve put on its stack), which `unset` does not change; under danger-full-access a
# command can read it for every process of its user, this shell and the shells that started
# it included. So, given INPUT_API_KEY, the script starts itself again (exec: same process,
# new environment block) without INPUT_API_KEY and without any other variable holding the
# same value, and hands the key over on descriptor 3, a pipe, which the new shell never reads:
# the subshell that starts agentexec reads it, closes the descriptor and execs agentexec with
# the key in its environment, so no shell holds the key in its memory either (a command that
# may ptrace this shell, as root or without Yama, would find it there). The writer is a
# subshell of the old shell, holding the old environment block; it has exited by the time the
# reader sees the end of the pipe. The caller should exec this script too, so that its own
# shell does not outlive the hand-off with the key in its block (action.yml).
if [ -n "${INPUT_API_KEY:-}" ]; then
  api_key=$INPUT_API_KEY
  exec 3< <(printf '%s' "$api_key")
  while IFS= read -r v; do
    [ "${!v}" != "$api_key" ] || unset "$v"
  done < <(compgen -e)
  export AGENTEXEC_STEP_KEY_FD=3
  exec "$BASH" "${BASH_SOURCE[0]}" "$@"
fi
key_on_fd3=
if [ -n "${AGENTEXEC_STEP_KEY_FD:-}" ]; then
  key_on_fd3=1
  unset AGENTEXEC_STEP_KEY_FD
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${AGENTEXEC_BIN:-agentexec}

die() { echo "agentexec step: $*" >&2; exit 2; }

# safe_git DIR ARGS...: git in DIR as agentexec runs it itself (engine/review/git.cc
# HardenedGitArgs / HardenedGitEnv, the same list): this script runs it unconfined after the
# run, in a repository whose configuration and attributes a command may have written (.git
# is writable when the sandbox has no mount namespace), so nothing named there is run:
# fsmonitor, filter drivers (listed, since their names are the repository's), pager, external
# diff, textconv (diffs also pass --no-ext-diff --no-textconv), signature programs, hooks;
# and no GIT_* variable but those naming the repository.
safe_git() {
  local dir=$1; shift
  (
    while IFS= read -r v; do
      case $v in
        GIT_DIR | GIT_WORK_TREE | GIT_COMMON_DIR | GIT_INDEX_FILE | GIT_OBJECT_DIRECTORY | \
          GIT_ALTERNATE_OBJECT_DIRECTORIES | GIT_CEILING_DIRECTORIES | \
          GIT_DISCOVERY_ACROSS_FILESYSTEM) ;;
        GIT_*) unset "$v" ;;
      esac
    done < <(compgen -e)
    export GIT_CONFIG_NOSYSTEM=1 GIT_ATTR_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_NO_LAZY_FETCH=1 \
      GIT_OPTIONAL_LOCKS=0
    base=(--no-pager -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.pager=cat
          -c diff.external= -c log.showSignature=false -c diff.ignoreSubmodules=dirty
          -c core.attributesFile=/dev/null)
    filters=()
    while IFS= read -r -d '' key; do
      driver=${key#filter.}
      driver=${driver%.*}
      [[ "$driver" == *=* ]] && { echo "agentexec step: the filter driver '$driver' cannot be switched off (its name holds '='); not running git" >&2; exit 1; }
      filters+=(-c "filter.$driver.clean=" -c "filter.$driver.smudge=" -c "filter.$driver.process="
                -c "filter.$driver.required=false")
    done < <(git -C "$dir" "${base[@]}" config -z --name-only --get-regexp \
               '^filter\..*\.(clean|smudge|process)$' 2>/dev/null || true)
    exec git -C "$dir" "${base[@]}" "${filters[@]}" "$@"
  )
}
[ -n "${INPUT_PROMPT:-}" ] && [ -n "${INPUT_PROMPT_FILE:-}" ] && die "give prompt or prompt-file, not both"
review=
[ "${INPUT_REVIEW:-false}" = true ] && review=1
[ -n "$review" ] || [ -n "${INPUT_PROMPT:-}" ] || [ -n "${INPUT_PROMPT_FILE:-}" ] ||
  die "no prompt: set the prompt or prompt-file input (or review: true)"
# A review reads and never writes: agentexec runs it read-only whatever is asked, so the
# writable roots below are asked for that mode.
[ -z "$review" ] || INPUT_SANDBOX=read-only

# PATH is ROOT or lies below it (both absolute and resolved; ROOT "/" holds everything).
under() { local root=${2%/}; [ "$1" = "$2" ] || [[ "$1" == "$root"/* ]]; }
# The options that decide what commands may write (the mode, --add-dir, -c, a profile),
# given to agentexec, which says which paths a run with them lets its commands write
# (--print-writable-roots): the directories below keep out of all of them. No list of ours.
cfg=() extra=()
[ -n "${INPUT_SANDBOX:-}" ] && cfg+=(-s "$INPUT_SANDBOX")
if [ -n "${INPUT_ARGS:-}" ]; then
  # Split like a shell, quotes honoured, nothing expanded or executed (xargs, not eval).
  split=$(printf '%s' "$INPUT_ARGS" | xargs -n1 printf '%s\n') ||
    die "args: cannot split (unbalanced quotes?): $INPUT_ARGS"
  mapfile -t extra <<<"$split"
fi
# The job's token, brokered (docs/CI.md, "Secrets a task needs"): commands can push their
# branch and call the forge's API with it, but only ever see a dummy; agentexec's proxy puts
# the real token into the requests to the forge's hosts. Under workspace-write only: the broker
# needs the network allow-list's proxy (broker-token: false turns it off, e.g. for
# network_access = true).
broker=()
if [ "${INPUT_BROKER_TOKEN:-true}" = true ] && [ "${INPUT_SANDBOX:-}" = workspace-write ]; then
  host_of() { local h=${1#*://}; printf '%s' "${h%%/*}"; }
  if [ -n "${INPUT_GITHUB_TOKEN:-}" ]; then
    web=$(host_of "${GITHUB_SERVER_URL:-https://github.com}")
    api=$(host_of "${GITHUB_API_URL:-https://api.github.com}")
    export GITHUB_TOKEN="$INPUT_GITHUB_TOKEN" GH_TOKEN="$INPUT_GITHUB_TOKEN"
    unset INPUT_GITHUB_TOKEN
    # git over https answers Basic auth; the API, Bearer (on one host, as GitHub Enterprise
    # Server's /api/v3, Basic serves both).
    broker+=(-c "network.credentials.forge-git.hosts=[\"$web\"]"
      -c 'network.credentials.forge-git.env="GITHUB_TOKEN"'
      -c 'network.credentials.forge-git.header="Authorization: Basic {basic:x-access-token}"')
    if [ "$api" != "$web" ]; then
      broker+=(-c "network.credentials.forge-api.hosts=[\"$api\"]"
        -c 'network.credentials.forge-api.env="GH_TOKEN"'
        -c 'network.credentials.forge-api.header="Authorization: Bearer {value}"')
    fi
  elif [ -n "${CI_JOB_TOKEN:-}" ] && [ -n "${CI_SERVER_HOST:-}" ]; then
    broker+=(-c "network.credentials.forge-git.hosts=[\"$CI_SERVER_HOST\"]"
      -c 'network.credentials.forge-git.env="CI_JOB_TOKEN"'
      -c 'network.credentials.forge-git.header="Authorization: Basic {basic:gitlab-ci-token}"')
  fi
fi
cfg+=("${broker[@]}")
roots_text=$("$bin" --print-writable-roots "${cfg[@]}" "${extra[@]}" </dev/null) ||
  die "agentexec cannot say which paths this run may write (its error above); not running"
roots=()  # none under read-only
[ -z "$roots_text" ] || mapfile -t roots <<<"$roots_text"
# Under danger-full-access ("/") commands can write anywhere the user can: no directory is out
# of their reach, so the directory below is only kept out of the workspace as before.
[ "${roots[*]}" = / ] && roots=("$(pwd -P)")
reachable() {
  local r
  for r in "${roots[@]}"; do under "$1" "$r" && return 0; done
  return 1
}
# The private directory: under $RUNNER_TEMP (GitHub: beside the workspace, not in it), else
# $XDG_RUNTIME_DIR, else ~/.cache; the first that no confined command can reach.
out=
for base in "${RUNNER_TEMP:-}" "${XDG_RUNTIME_DIR:-}" "${HOME:+$HOME/.cache}"; do
  [ -n "$base" ] || continue
  mkdir -p -m 700 -- "$base" 2>/dev/null || continue
  real=$(realpath -e -- "$base" 2>/dev/null) || continue
  reachable "$real" && continue
  out=$(mktemp -d "$real/agentexec-XXXXXX" 2>/dev/null) && break
done
[ -n "$out" ] || die "no private directory outside the sandbox's writable roots (${roots[*]}): RUNNER_TEMP, XDG_RUNTIME_DIR and HOME/.cache are all inside them or not writable"
events="$out/events.jsonl"

# AGENTEXEC_OUT_DIR is made at the end with a plain mkdir; its parent is resolved now, before
# any command runs, and must still be the same directory then.
dest= dest_parent=
if [ -n "${AGENTEXEC_OUT_DIR:-}" ]; then
  dest=${AGENTEXEC_OUT_DIR%/}
  [ -e "$dest" ] || [ -L "$dest" ] &&
    die "AGENTEXEC_OUT_DIR $dest already exists; it is created fresh for the artifacts (remove it first)"
  dest_parent=$(cd -P -- "$(dirname -- "$dest")" && pwd) ||
    die "AGENTEXEC_OUT_DIR: no parent directory for $dest"
  dest="$dest_parent/$(basename -- "$dest")"
fi

# Human progress on stderr, live in the job log; the JSONL stream into the private directory.
: >"$events"
args=(--events-file "$events" -o "$out/final-message.md" "${cfg[@]}")
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
[ -n "${INPUT_ARGS:-}" ] && args+=("${extra[@]}")
[ -n "${INPUT_BASE_URL:-}" ] && export OPENAI_BASE_URL="$INPUT_BASE_URL"
# The key goes to AGENTEXEC_API_KEY (which agentexec prefers over OPENAI_API_KEY) in
# agentexec's environment only, read from descriptor 3 by the subshell that becomes agentexec
# (above): agentexec overwrites it in its own startup block once read, and commands the model
# runs never get it (variables named *KEY* are dropped from their environment).
run_agentexec() {
  if [ -z "$key_on_fd3" ]; then "$bin" "$@"; return; fi
  (
    IFS= read -r -d '' k <&3 || true
    exec 3<&-
    [ -n "$k" ] || { echo "agentexec step: no key on descriptor 3" >&2; exit 2; }
    AGENTEXEC_API_KEY=$k exec "$bin" "$@"
  )
}

# review: the change since the merge base with the merge request's target branch (fetched
# first: a merge request pipeline may not have it), else the commit the pipeline runs for.
if [ -n "$review" ]; then
  base=${INPUT_REVIEW_BASE:-${CI_MERGE_REQUEST_TARGET_BRANCH_NAME:-${GITHUB_BASE_REF:-}}}
  target=(--commit HEAD)
  if [ -n "$base" ]; then
    safe_git . fetch -q origin "+refs/heads/$base:refs/remotes/origin/$base" ||
      echo "agentexec step: could not fetch origin $base; reviewing against what is there" >&2
    target=(--base "origin/$base")
  fi
  args=(review "${target[@]}" --format markdown
        --report "codequality=$out/gl-code-quality-report.json"
        --report "sarif=$out/gl-sarif-report.sarif" "${args[@]}")
fi

code=0
if [ -n "$review" ] && [ -z "${INPUT_PROMPT:-}" ] && [ -z "${INPUT_PROMPT_FILE:-}" ]; then
  run_agentexec "${args[@]}" </dev/null || code=$?
elif [ -n "${INPUT_PROMPT_FILE:-}" ]; then
  [ -r "$INPUT_PROMPT_FILE" ] || die "prompt-file not readable: $INPUT_PROMPT_FILE"
  run_agentexec "${args[@]}" - <"$INPUT_PROMPT_FILE" || code=$?
else
  run_agentexec "${args[@]}" -- "$INPUT_PROMPT" </dev/null || code=$?
fi
[ -z "$key_on_fd3" ] || exec 3<&-
echo "$code" >"$out/exit-code"

# The change as a patch, through a scratch index so the job's own index is left alone.
if top=$(safe_git . rev-parse --show-toplevel 2>/dev/null) &&
  safe_git . rev-parse -q --verify HEAD >/dev/null; then
  exclude=()  # the artifact directory, when it lies inside the work tree (GitLab)
  if [ -n "$dest" ]; then
    rel=$(realpath -m --relative-to="$top" "$dest")
    [[ "$rel" != ../* ]] && exclude=(":(top,exclude)$rel")
  fi
  # Staged as batch stages a task's clone (batch/run.cc, StageChanges): every change to
  # a tracked file, then the untracked files that neither the repository ignores nor
  # artefacts.gitignore names.
  artefacts=()
  while IFS= read -r pattern; do
    case $pattern in "" | "#"*) ;; *) artefacts+=("--exclude=$pattern") ;; esac
  done <"$here/artefacts.gitignore"
  (export GIT_INDEX_FILE="$out/index"
   safe_git "$top" read-tree HEAD && safe_git "$top" add -u -- ":/" "${exclude[@]}" &&
     safe_git "$top" ls-files -z --others --exclude-standard "${artefacts[@]}" -- ":/" \
       "${exclude[@]}" >"$out/untracked" &&
     { [ ! -s "$out/untracked" ] || safe_git "$top" --literal-pathspecs add \
       --pathspec-from-file="$out/untracked" --pathspec-file-nul; } &&
     safe_git "$top" diff --no-ext-diff --no-textconv --cached --binary HEAD \
       >"$out/changes.patch") ||
    echo "agentexec step: could not write changes.patch" >&2
  rm -f "$out/index" "$out/untracked"
fi

# A summary that cannot be made must not hide agentexec's own exit code.
"$here/../summarize-events.sh" markdown "$events" >"$out/summary.md" ||
  echo "### agentexec: no summary (see $events)" >"$out/summary.md"
if [ "$code" -ne 0 ]; then
  printf '\n_agentexec exited with code %s_ (0 done, 1 model/API failure, 2 usage or configuration error, 3 sandbox unavailable, 4 limit reached, 5 output not writable, 6 final answer fails --output-schema, 130 interrupted (SIGINT), 143 terminated (SIGTERM))\n' \
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
# The artifacts into AGENTEXEC_OUT_DIR: agentexec has exited, so its commands are gone; a
# directory (or link) there now was made by one of them, and is refused, never written
# through. The files are created, not overwritten (noclobber: O_EXCL).
if [ -n "$dest" ]; then
  now=$(cd -P -- "$(dirname -- "$dest")" 2>/dev/null && pwd) || now=
  if [ "$now" != "$dest_parent" ]; then
    echo "agentexec step: the parent of $dest was replaced during the run; not writing the artifacts there (they are in $out)" >&2
    [ "$code" -ne 0 ] || code=5
    exit "$code"
  fi
  if ! mkdir -m 755 -- "$dest" 2>/dev/null; then
    # Whatever a command left there (links to files outside, to /proc/self/environ) must not
    # be uploaded as the artifact either; rm removes links, never what they point to.
    echo "agentexec step: $dest was created during the run; removed it, not writing the artifacts there (they are in $out)" >&2
    rm -rf -- "$dest"
    [ "$code" -ne 0 ] || code=5
    exit "$code"
  fi
  (set -C
   for f in events.jsonl final-message.md summary.md exit-code changes.patch \
     gl-code-quality-report.json gl-sarif-report.sarif; do
     if [ -f "$out/$f" ]; then cat -- "$out/$f" >"$dest/$f" || exit 1; fi
   done) || { echo "agentexec step: could not copy the artifacts into $dest (they are in $out)" >&2
              [ "$code" -ne 0 ] || code=5; exit "$code"; }
  rm -rf -- "$out"
  events="$dest/events.jsonl"
fi

echo "agentexec step: exit code $code; events in $events" >&2
exit "$code"
