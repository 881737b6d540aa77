# Sourced by run.sh: a user's first pipeline step, on real engines without Docker. The GitLab
# component (templates/agentexec.yml) runs in gitlab-ci-local's shell executor, and the GitHub
# Action's steps (action.yml) run as a runner runs them (tests/dist/gha.py: bash, the real
# scripts, the binary installed from a release tarball of this build). Each fixes a typo in a
# small git workspace, talking to the strict loopback model server (tests/support/
# model_server.py) over HTTP with a test key. Each case asserts:
#   - the file is fixed in the workspace and owned by the workspace's owner (the job's user);
#   - the artifact's events.jsonl validates against schema/events.schema.json and holds the
#     command, the patch and the answer;
#   - the job log shows the human progress live: when the model server receives the third
#     request (it holds that request 5 s before answering), the log already shows the command
#     and the patch, and not yet the answer; at the end it holds the answer and no JSONL.
# Uses $root, $build, $bin, $pids and result from run.sh. Its files live outside /tmp
# (under the build tree): on a runner, HOME and RUNNER_TEMP lie outside the sandbox's
# writable roots (the workspace, /tmp), which scripts/ci/run.sh relies on.
mkdir -p "$build/engines"
pl=$(mktemp -d "$build/engines/pipelines.XXXXXX")
pl_key=test-pipeline-key
# Run as root, the jobs run as uid 1001, as a runner's job user (GitHub's `runner`, a GitLab
# shell runner's `gitlab-runner`), in workspaces that user owns: a file the sandbox wrote as
# anyone else (root, the overflow uid) then shows up.
pl_as=()
pl_uid=$(id -u)
if [ "$pl_uid" = 0 ] && command -v setpriv >/dev/null &&
  setpriv --reuid=1001 --regid=1001 --clear-groups test -x "$bin" -a -r "$root/action.yml" -a \
    -x "$build/engines"; then  # (a checkout only root can read is run as root)
  pl_as=(setpriv --reuid=1001 --regid=1001 --clear-groups)
  pl_uid=1001
fi
chmod 755 "$pl"
cat >"$pl/turns.json" <<'JSON'
{"turns":[
  {"items":[{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cat greeting.txt\"}","call_id":"call_1"}]},
  {"items":[{"type":"custom_tool_call","name":"apply_patch","call_id":"call_2","input":"*** Begin Patch\n*** Update File: greeting.txt\n@@\n-helo, world\n+hello, world\n*** End Patch"}]},
  {"items":[{"type":"message","text":"Fixed the typo in greeting.txt."}]}]}
JSON

# pl_workspace DIR: a git repository whose greeting.txt has a typo.
pl_workspace() {
  git init -q -b main "$1" && printf 'helo, world\n' >"$1/greeting.txt" && git -C "$1" add -A &&
    git -C "$1" -c user.name=t -c user.email=t@example.com commit -qm init
}

# pl_server NAME: the strict model server for NAME, holding the third request 5 s; sets pl_url.
pl_server() {
  local name=$1
  python3 "$root/tests/support/model_server.py" --script "$pl/turns.json" \
    --port-file "$pl/$name.port" --log-dir "$pl/$name.requests" --max-seconds 900 \
    --fault "stall_before_headers=5:requests=3" >"$pl/$name.server.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 200); do [ -s "$pl/$name.port" ] && break; sleep 0.05; done
  pl_url="http://127.0.0.1:$(cat "$pl/$name.port" 2>/dev/null)/v1"
}

# pl_watch NAME LOG: in the background, copies LOG to $pl/NAME.live as soon as the server has
# received the third request (the answer's), which it holds for 5 s.
pl_watch() {
  local name=$1 log=$2
  (for _ in $(seq 1 12000); do
     if [ -e "$pl/$name.requests/request-003.json" ]; then cp "$log" "$pl/$name.live"; exit 0; fi
     sleep 0.05
   done) &
  pl_watcher=$!
}

# pl_lines LOG: the log's lines without gitlab-ci-local's "JOB > " prefix.
pl_lines() { sed -E 's/^agentexec > //' "$1"; }

# pl_check NAME WORKSPACE EVENTS LOG: prints why the case fails, or nothing.
pl_check() {
  local name=$1 ws=$2 events=$3 log=$4 live=$pl/$1.live
  if [ "$(cat "$ws/greeting.txt" 2>/dev/null)" != "hello, world" ]; then
    echo "greeting.txt not fixed: $(cat "$ws/greeting.txt" 2>&1)"
  elif [ "$(stat -c %u:%g "$ws/greeting.txt")" != "$(stat -c %u:%g "$ws")" ] ||
    [ "$(stat -c %u "$ws")" != "$pl_uid" ]; then
    echo "greeting.txt is owned by $(stat -c %u:%g "$ws/greeting.txt"), the workspace by $(stat -c %u:%g "$ws"), the job runs as $pl_uid"
  elif [ ! -s "$events" ]; then
    echo "no artifact events.jsonl at $events"
  elif ! python3 - "$root/schema/events.schema.json" "$events" "$ws" >"$pl/$name.schema" 2>&1 <<'PY'; then
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
validator = jsonschema.validators.validator_for(schema)(schema)
# The validator refuses what the schema forbids (a command item without its fields).
assert not validator.is_valid({"type": "item.completed", "item": {"id": "item_0", "type": "command_execution"}})
text = open(sys.argv[2]).read()
assert text.endswith("\n"), "the last line is not terminated"
events = []
for n, line in enumerate(text.split("\n")[:-1], 1):
    event = json.loads(line)
    errors = list(validator.iter_errors(event))
    assert not errors, f"line {n} does not validate: {errors[0].message}: {line}"
    events.append(event)
done = [e["item"] for e in events if e["type"] == "item.completed"]
kinds = [(i["type"], i.get("command") or i.get("text") or [c["path"] for c in i.get("changes", [])]) for i in done]
want = [("command_execution", "/bin/bash -lc 'cat greeting.txt'"),
        ("file_change", [sys.argv[3] + "/greeting.txt"]),
        ("agent_message", "Fixed the typo in greeting.txt.")]
assert kinds == want, f"completed items {kinds}"
assert [e["type"] for e in events][0] == "thread.started" and events[-1]["type"] == "turn.completed", [e["type"] for e in events]
PY
    echo "events.jsonl: $(tail -c 800 "$pl/$name.schema")"
  elif [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["headers"].get("authorization"))' "$pl/$name.requests/request-001.json" 2>&1)" != "Bearer $pl_key" ] ||
    [ -e "$pl/$name.requests/request-004.json" ]; then
    echo "the model server did not get three requests with the job's key: $(ls "$pl/$name.requests" 2>&1)"
  elif [ ! -s "$live" ]; then
    echo "the log was not read while the server held the third request"
  elif ! pl_lines "$live" | grep -qxF "/bin/bash -lc 'cat greeting.txt'" ||
    ! pl_lines "$live" | grep -qxF "apply patch" || ! pl_lines "$live" | grep -qxF "+hello, world" ||
    grep -qF "Fixed the typo" "$live"; then
    echo "the log while the answer was pending lacks the command or the patch, or has the answer: $(tail -c 1500 "$live")"
  elif ! pl_lines "$log" | grep -qxF "Fixed the typo in greeting.txt." || grep -qF '{"type":' "$log"; then
    echo "the job log lacks the answer, or holds JSONL: $(tail -c 1500 "$log")"
  fi
}

# --- the GitLab component, gitlab-ci-local's shell executor -------------------------------------
# The component reference of docs/CI.md becomes a local include of templates/agentexec.yml (no
# GitLab to fetch it from; tests/dist/yaml_lint_test.py does the same). Its image is ignored
# (--force-shell-executor); AGENTEXEC_SCRIPTS, which names the image's copy of scripts/, is set
# to this checkout's, and agentexec is on PATH, as the image has them.
# gitlab-ci-local ($gcl) is installed by batch_gitlab.sh, which run.sh sources before this file.
pl_gitlab_missing=${gitlab_missing-gitlab-ci-local is not installed (batch_gitlab.sh installs it)}
if [ -n "$pl_gitlab_missing" ]; then
  result SKIP pipeline_gitlab_shell "$pl_gitlab_missing"
else
  proj=$pl/gitlab/project
  mkdir -p "$pl/gitlab/bin" "$pl/gitlab/home" && pl_workspace "$proj"
  ln -sf "$bin" "$pl/gitlab/bin/agentexec"
  pl_server gitlab
  mkdir -p "$proj/templates" && cp "$root/templates/agentexec.yml" "$proj/templates/"
  cat >"$proj/.gitlab-ci.yml" <<YAML
include:
  - component: \$CI_SERVER_FQDN/OWNER/agentexec/agentexec@0.1.0
    inputs:
      prompt: fix the typo in greeting.txt
      base-url: $pl_url
YAML
  sed -i 's|component: \$CI_SERVER_FQDN/OWNER/agentexec/agentexec@0.1.0|local: templates/agentexec.yml|' \
    "$proj/.gitlab-ci.yml"
  git -C "$proj" remote add origin https://gitlab.example.com/group/project.git &&
    git -C "$proj" add -A && git -C "$proj" -c user.name=t -c user.email=t@example.com commit -qm ci
  chown -R "$pl_uid:$pl_uid" "$pl/gitlab"
  pl_watch gitlab "$pl/gitlab.log"
  # The key is a CI/CD variable (masked in GitLab), read by the component's default
  # api-key input ($OPENAI_API_KEY).
  # gitlab-ci-local (4.70.1) gives a job with an image: CI_PROJECT_DIR=/builds/GROUP/PROJECT
  # even under --force-shell-executor, where the job runs in the project itself; it is set to
  # that directory, as a shell runner sets it to the job's checkout.
  (cd "$proj" && "${pl_as[@]}" env -u AGENTEXEC_HOME HOME="$pl/gitlab/home" PATH="$pl/gitlab/bin:$PATH" \
    timeout 600 "$gcl/node_modules/.bin/gitlab-ci-local" --force-shell-executor \
    --home "$pl/gitlab/gcl-home" --variable "CI_PROJECT_DIR=$proj" \
    --ignore-predefined-vars CI_PROJECT_DIR \
    --variable "AGENTEXEC_SCRIPTS=$root/scripts" \
    --variable "OPENAI_API_KEY=$pl_key" >"$pl/gitlab.log" 2>&1)
  code=$?
  kill "$pl_watcher" 2>/dev/null
  wait "$pl_watcher" 2>/dev/null
  artifact=$proj/.gitlab-ci-local/artifacts/agentexec/agentexec-out
  if [ $code -ne 0 ]; then
    result FAIL pipeline_gitlab_shell "gitlab-ci-local exit $code: $(tail -c 1500 "$pl/gitlab.log")"
  else
    why=$(pl_check gitlab "$proj" "$artifact/events.jsonl" "$pl/gitlab.log")
    if [ -z "$why" ] && [ "$(cat "$artifact/exit-code" 2>&1)" != 0 ]; then
      why="the artifact's exit-code: $(cat "$artifact/exit-code" 2>&1)"
    elif [ -z "$why" ] && ! grep -qxF "+hello, world" "$artifact/changes.patch"; then
      why="the artifact's changes.patch: $(cat "$artifact/changes.patch" 2>&1)"
    fi
    if [ -z "$why" ]; then result PASS pipeline_gitlab_shell; else result FAIL pipeline_gitlab_shell "$why"; fi
  fi
fi

# --- the GitHub Action's steps, as a runner runs them -----------------------------------------
# tests/dist/gha.py runs action.yml's steps for real (bash, scripts/ci/install.sh installing a
# release tarball of this build from a file:// mirror, scripts/ci/run.sh), with GITHUB_OUTPUT,
# GITHUB_STEP_SUMMARY and RUNNER_TEMP files, each step's output streamed into one job log.
gd=$pl/github
mkdir -p "$gd/home" && pl_workspace "$gd/workspace"
chown -R "$pl_uid:$pl_uid" "$gd"
pl_server github
pl_watch github "$gd/job.log"
(cd "$gd" && "${pl_as[@]}" env -u AGENTEXEC_HOME HOME="$gd/home" timeout 600 python3 - "$root" \
  "$bin" "$gd" "$pl_url" "$pl_key" >"$gd/runner.out" 2>&1 <<'PY'
import json, os, re, sys
root, binary, d, url, key = sys.argv[1:]
sys.path.insert(0, os.path.join(root, "tests", "dist"))
import gha, support
os.makedirs(os.path.join(d, "release"))
support.make_release(binary, os.path.join(d, "release"))
env = {k: v for k, v in os.environ.items()
       if not re.search(r"KEY|TOKEN|SECRET", k) and not k.startswith(("GITHUB_", "CI_"))}
env["AGENTEXEC_DOWNLOAD_BASE"] = "file://" + os.path.join(d, "release")
runner = gha.Runner(os.path.join(d, "workspace"), env=env, tmp=d,
                    job_log=os.path.join(d, "job.log"))
result = runner.run_action(gha.REPO_ROOT, {
    "prompt": "fix the typo in greeting.txt", "api-key": key, "base-url": url,
    "version": support.version()})
out = result.outputs
steps = {s[0]: s[1:3] for s in result.steps}
summary = open(runner.summary_file).read()
events = out.get("events-file", "")
out_dir = os.path.dirname(events)  # the run step's out-dir, which the upload step names
uploads = [w for u, w in result.uses if u.startswith("actions/upload-artifact@")]
thread = json.loads(open(events).readline())["thread_id"] if os.path.isfile(events) else ""
patch = os.path.join(out_dir, "changes.patch")
final = "Fixed the typo in greeting.txt."
checks = [
    (result.success, f"the job failed: {steps}"),
    (steps.get("Install agentexec") == ("success", 0)
     and steps.get("Run agentexec") == ("success", 0), f"steps {steps}"),
    (out.get("exit-code") == "0", f"exit-code output {out.get('exit-code')!r}"),
    (out.get("final-message") == final, f"final-message output {out.get('final-message')!r}"),
    (thread and out.get("thread-id") == thread,
     f"thread-id output {out.get('thread-id')!r}, the events' {thread!r}"),
    (out_dir.startswith(runner.runner["temp"] + "/"), f"events-file {events!r} is not under RUNNER_TEMP"),
    (uploads == [{"name": "agentexec-events", "path": out_dir, "if-no-files-found": "warn"}],
     f"uploads {uploads}"),
    (summary.startswith("### agentexec: completed\n") and summary.rstrip().endswith(final),
     f"step summary {summary!r}"),
    (os.path.isfile(patch) and "\n+hello, world\n" in open(patch).read(),
     "no changes.patch with the fix in out-dir"),
]
why = [w for ok, w in checks if not ok]
print(json.dumps({"events": events, "why": why[0] if why else ""}))
PY
)
code=$?
kill "$pl_watcher" 2>/dev/null
wait "$pl_watcher" 2>/dev/null
gh_result=$(tail -n1 "$gd/runner.out")
if [ $code -ne 0 ] ||
  ! why=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["why"])' "$gh_result" 2>/dev/null); then
  result FAIL pipeline_github_action "the runner exited $code: $(tail -c 1500 "$gd/runner.out"); job log: $(tail -c 1000 "$gd/job.log")"
else
  [ -z "$why" ] && why=$(pl_check github "$gd/workspace" \
    "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["events"])' "$gh_result")" "$gd/job.log")
  if [ -z "$why" ]; then result PASS pipeline_github_action; else result FAIL pipeline_github_action "$why"; fi
fi

rm -rf "$pl"
