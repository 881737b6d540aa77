# Sourced by run.sh after batch_common.sh: ci-examples/kubernetes/batch-indexed-job.yml, with no
# cluster. (1) Validated against the Kubernetes API schema as published in kubernetes-models
# (npm, pinned), which must first reject a broken copy; (2) its podFailurePolicy maps
# agentexec's exit codes as docs/CI.md says; (3) its container script runs for both
# completion indexes on the local repositories and the merged report equals the unsharded one.
k8s_file=$root/ci-examples/kubernetes/batch-indexed-job.yml
kmod=$build/engines/kubernetes-models
k8s_missing=""
if [ ! -d "$kmod/node_modules/kubernetes-models" ] || [ ! -d "$kmod/node_modules/js-yaml" ]; then
  k8s_missing=$(npm_install "$kmod" "$work/k8s-npm.log" kubernetes-models@4.5.1 js-yaml@4)
fi

if [ -n "$k8s_missing" ]; then
  result SKIP batch_kubernetes_schema "$k8s_missing"
else
  cat >"$kmod/validate.cjs" <<'JS'
// validate.cjs FILE: every document of FILE validated as its apiVersion/kind.
const fs = require("fs");
const yaml = require("js-yaml");
const groups = { "batch/v1": require("kubernetes-models/batch/v1"), v1: require("kubernetes-models/v1") };
for (const doc of yaml.loadAll(fs.readFileSync(process.argv[2], "utf8"))) {
  const Kind = (groups[doc.apiVersion] || {})[doc.kind];
  if (!Kind) throw new Error(`unknown ${doc.apiVersion} ${doc.kind}`);
  new Kind(doc).validate();
}
JS
  # A copy with an action Kubernetes does not have must be rejected, or the check is empty.
  sed 's/action: FailIndex/action: Retry/' "$k8s_file" >"$work/k8s-broken.yml"
  if node "$kmod/validate.cjs" "$work/k8s-broken.yml" >/dev/null 2>&1; then
    result FAIL batch_kubernetes_schema "the validator accepted action: Retry"
  elif ! node "$kmod/validate.cjs" "$k8s_file" >"$work/k8s.log" 2>&1; then
    result FAIL batch_kubernetes_schema "$(tail -c 800 "$work/k8s.log")"
  elif ! python3 - "$k8s_file" <<'PY' 2>"$work/k8s-fields.err"; then
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
spec = job["spec"]
assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 2
rules = {r["action"]: r["onExitCodes"] for r in spec["podFailurePolicy"]["rules"]}
assert rules["FailIndex"]["values"] == [2, 3, 5] and rules["Count"]["values"] == [1, 4], rules
c = spec["template"]["spec"]["containers"][0]
assert all(r["containerName"] == c["name"] for r in rules.values())
assert "--shard-total 2" in c["args"][0], "--shard-total must equal completions"
assert spec["template"]["spec"]["restartPolicy"] == "Never"
PY
    result FAIL batch_kubernetes_schema "fields: $(tail -c 400 "$work/k8s-fields.err")"
  else
    result PASS batch_kubernetes_schema
  fi
fi

# The container script itself, index by index, with the paths of this host.
kd=$bwork/k8s
mkdir -p "$kd/home" "$kd/bin"
ln -sf "$bin" "$kd/bin/agentexec"
printf 'model_provider = "scripted"\n[model_providers.scripted]\nscript = "%s"\n' \
  "$bwork/turns.json" >"$kd/home/config.toml"
k8s_script=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]["args"][0])' "$k8s_file" 2>"$work/k8s-script.err")
k8s_script=${k8s_script//\/batch\/manifest.jsonl/$bwork/tasks.jsonl}
k8s_script=${k8s_script//\/work\//$kd/}
k8s_why=""
[ -n "$k8s_script" ] || k8s_why="no container script: $(cat "$work/k8s-script.err")"
for i in 0 1; do
  [ -n "$k8s_why" ] && break
  env AGENTEXEC_HOME="$kd/home" PATH="$kd/bin:$PATH" JOB_COMPLETION_INDEX=$i bash -c "$k8s_script" \
    >"$kd/pod-$i.log" 2>"$kd/pod-$i.err" ||
    k8s_why="index $i: exit $?: $(tail -c 600 "$kd/pod-$i.err")"
  [ -n "$k8s_why" ] || grep -q '"summary":{"total":' "$kd/pod-$i.log" ||
    k8s_why="index $i printed no JSON report: $(tail -c 400 "$kd/pod-$i.log")"
done
if [ -n "$k8s_why" ]; then
  result FAIL batch_kubernetes_indexes "$k8s_why"
elif ! "$bin" batch report "$kd"/out-* --manifest "$bwork/tasks.jsonl" >"$kd/report.md" 2>"$kd/report.err" ||
  ! "$bin" batch report "$kd"/out-* --format junit >"$kd/report.xml" 2>>"$kd/report.err"; then
  result FAIL batch_kubernetes_indexes "batch report: $(cat "$kd/report.err")"
else
  batch_check batch_kubernetes_indexes "$kd/report.md" "$kd/report.xml"
fi
