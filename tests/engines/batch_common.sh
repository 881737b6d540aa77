# Sourced by run.sh before the batch engine cases: three local repositories, a manifest over
# them, a scripted model every task follows (add new.txt, then answer), and the unsharded
# reference report the sharded runs must reproduce. Uses $work, $bin and result from run.sh.
bwork=$work/batch
mkdir -p "$bwork/home"
for r in alpha beta gamma; do
  git init -q "$bwork/$r" && echo hi >"$bwork/$r/f.txt" && git -C "$bwork/$r" add . &&
    git -C "$bwork/$r" -c user.name=t -c user.email=t@example.com commit -qm init
done
# Each task's check proves its change (#39): it runs in the task's sandbox after the turn.
cat >"$bwork/tasks.jsonl" <<JSONL
{"id":"alpha","repo":"$bwork/alpha","prompt":"add a file","check":"grep -qx hello new.txt"}
{"id":"beta","repo":"$bwork/beta","prompt":"add a file","check":"grep -qx hello new.txt"}
{"id":"gamma","repo":"$bwork/gamma","prompt":"add a file","check":"grep -qx hello new.txt"}
JSONL

# batch_remotes NAME: bare copies of the three repositories for an engine whose batch pushes
# (--push) its branches, and $bwork/tasks-NAME.jsonl naming them; each engine pushes to its
# own, so one engine's branches never make another's diverge.
batch_remotes() {
  local name=$1 r
  mkdir -p "$bwork/remotes/$name"
  for r in alpha beta gamma; do
    git clone -q --bare "$bwork/$r" "$bwork/remotes/$name/$r.git"
  done
  sed "s|\"repo\":\"$bwork/\\([a-z]*\\)\"|\"repo\":\"$bwork/remotes/$name/\\1.git\"|" \
    "$bwork/tasks.jsonl" >"$bwork/tasks-$name.jsonl"
}

# batch_delivered NAME DIR...: the three branches are on NAME's remotes at the commits the
# shards' branch.json name, each with a pull-request title and body; with `again`, a second
# `batch publish` of each DIR pushes nothing. Prints why not, or nothing.
batch_delivered() {
  local name=$1 again=$2 r dir commit head
  shift 2
  for r in alpha beta gamma; do
    commit=""
    for dir in "$@"; do
      [ -f "$dir/tasks/$r/branch.json" ] &&
        commit=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["commit"])' "$dir/tasks/$r/branch.json") &&
        { [ -s "$dir/tasks/$r/pr-title.txt" ] && grep -q '^### Check' "$dir/tasks/$r/pr-body.md" ||
          { echo "$r: no pull-request title and body beside its branch"; return; }; }
    done
    [ -n "$commit" ] || { echo "$r: no branch.json in $*"; return; }
    head=$(git -C "$bwork/remotes/$name/$r.git" rev-parse -q --verify "refs/heads/agentexec/$r")
    [ "$head" = "$commit" ] || { echo "$r: the remote's agentexec/$r is '$head', not $commit"; return; }
  done
  [ "$again" = again ] || return 0
  for dir in "$@"; do
    "$bin" batch publish "$dir" >"$dir.publish.log" 2>&1 ||
      { echo "second publish of $dir: $(cat "$dir.publish.log")"; return; }
    grep -q '^publish: 0 pushed, [0-9]* up to date, 0 not pushed$' "$dir.publish.log" ||
      { echo "second publish of $dir pushed something: $(cat "$dir.publish.log")"; return; }
  done
}
cat >"$bwork/turns.json" <<'JSON'
{"turns":[
  {"items":[{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch"}]},
  {"items":[{"type":"message","text":"Added new.txt."}],"usage":{"input_tokens":100,"output_tokens":20}}]}
JSON
# The options every `batch run` of these cases gets (the same as tests/e2e/batch_test.cc).
batch_opts=(-s workspace-write -c model_provider=scripted
  -c "model_providers.scripted.script=\"$bwork/turns.json\"")
export AGENTEXEC_HOME=$bwork/home

# Markdown with the durations (the task's and its check's: the only run-dependent cells)
# replaced, and whether a branch was pushed left out (only some engines push).
batch_normalise() {
  sed -E -e 's/ [0-9]+(h|m|s|ms)[0-9hms]* \|/ <d> |/g' -e 's/ \((pushed|not pushed)\) \|/ |/g' "$1"
}

# The reference: the same manifest, unsharded, in one process.
batch_reference=""
if "$bin" batch run "$bwork/tasks.jsonl" --out "$bwork/whole" "${batch_opts[@]}" \
  >"$bwork/whole.log" 2>&1 &&
  "$bin" batch report "$bwork/whole" --manifest "$bwork/tasks.jsonl" >"$bwork/whole.md" 2>>"$bwork/whole.log"; then
  batch_reference=$(batch_normalise "$bwork/whole.md")
else
  batch_reference_error="the unsharded batch failed: $(tail -c 600 "$bwork/whole.log")"
fi

# batch_check NAME MARKDOWN JUNIT: the merged report lists all three tasks, succeeded, equals
# the unsharded one, and the JUnit holds three passing test cases.
batch_check() {
  local name=$1 md=$2 xml=$3 why=""
  if [ -n "${batch_reference_error:-}" ]; then
    why=$batch_reference_error
  elif [ ! -s "$md" ]; then
    why="no Markdown report"
  elif ! grep -q '^3 tasks: 3 succeeded, 0 failed, 0 no change' "$md"; then
    why="the report does not count three succeeded tasks: $(cat "$md")"
  elif [ "$(grep -cE '^\| (alpha|beta|gamma) \| succeeded \|  \| passed in [0-9hms]+ \| 1 \| 120 \|' "$md")" != 3 ]; then
    why="the report does not list alpha, beta and gamma: $(cat "$md")"
  elif [ "$(batch_normalise "$md")" != "$batch_reference" ]; then
    why="merged report differs from the unsharded one: $(diff <(echo "$batch_reference") <(batch_normalise "$md") | head -20)"
  elif ! python3 - "$xml" <<'PY' 2>"$work/$name.junit.err"; then
import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
cases = r.findall(".//testcase")
assert sorted(c.get("name") for c in cases) == ["alpha", "beta", "gamma"], [c.attrib for c in cases]
assert not r.findall(".//failure") and not r.findall(".//error")
assert all(p.get("value") == "0" for p in r.iter("property") if p.get("name") == "check.exit_code")
assert len([p for p in r.iter("property") if p.get("name") == "check.exit_code"]) == 3
PY
    why="JUnit report: $(tail -c 400 "$work/$name.junit.err")"
  fi
  if [ -z "$why" ]; then result PASS "$name"; else result FAIL "$name" "$why"; fi
}
