# Sourced by run.sh after batch_common.sh: GitLab `parallel: 2` through gitlab-ci-local
# (npm, pinned: 4.70.1 is the last release for Node 20) with the shell executor. The shard
# jobs run `batch run` (the shard from CI_NODE_INDEX/CI_NODE_TOTAL) and keep out-N as an
# artifact; the report job, which needs them, merges the artifacts into Markdown and JUnit.
gcl=$build/engines/gitlab-ci-local
gitlab_missing=""
if [ ! -x "$gcl/node_modules/.bin/gitlab-ci-local" ]; then
  mkdir -p "$gcl"
  if ! command -v npm >/dev/null; then
    gitlab_missing="npm is not installed"
  elif ! (cd "$gcl" && timeout 300 npm install --no-audit --no-fund --silent \
      gitlab-ci-local@4.70.1 >"$work/gcl-npm.log" 2>&1); then
    gitlab_missing="npm could not install gitlab-ci-local ($(tail -n1 "$work/gcl-npm.log"))"
  fi
fi

# gitlab-ci-local copies the project into each job's build directory with rsync.
if [ -z "$gitlab_missing" ] && ! command -v rsync >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y --no-install-recommends rsync \
      >"$work/rsync-apt.log" 2>&1 || gitlab_missing="apt-get could not install rsync ($(tail -n1 "$work/rsync-apt.log"))"
  else
    gitlab_missing="gitlab-ci-local needs rsync, which is not installed"
  fi
fi

if [ -n "$gitlab_missing" ]; then
  result SKIP batch_gitlab_parallel "$gitlab_missing"
else
  proj=$bwork/gitlab
  mkdir -p "$proj"
  cp "$bwork/tasks.jsonl" "$proj/tasks.jsonl"
  # The project's pipeline is the shipped example's shape; AGENTEXEC and the model options
  # come in as variables (a real project would use the released binary and an API key).
  cat >"$proj/.gitlab-ci.yml" <<'YAML'
stages: [shard, report]
shard:
  stage: shard
  parallel: 2
  script:
    - '"$AGENTEXEC" batch run tasks.jsonl --out "out-$CI_NODE_INDEX" -s workspace-write -c model_provider=scripted -c "model_providers.scripted.script=\"$TURNS\""'
  artifacts:
    when: always
    paths: [out-*/results.jsonl, out-*/tasks/]
report:
  stage: report
  needs: [shard]
  script:
    - '"$AGENTEXEC" batch report out-* --manifest tasks.jsonl --format markdown > report.md'
    - '"$AGENTEXEC" batch report out-* --format junit > report.xml'
  artifacts:
    when: always
    paths: [report.md, report.xml]
YAML
  git -C "$proj" init -q && git -C "$proj" remote add origin https://gitlab.example.com/group/project.git &&
    git -C "$proj" add . &&
    git -C "$proj" -c user.name=t -c user.email=t@example.com commit -qm ci
  (cd "$proj" && timeout 600 "$gcl/node_modules/.bin/gitlab-ci-local" --shell-executor-no-image \
    --shell-isolation --home "$bwork/gcl-home" --variable "AGENTEXEC=$bin" \
    --variable "TURNS=$bwork/turns.json" --variable "AGENTEXEC_HOME=$bwork/home" \
    >"$work/gitlab.log" 2>&1)
  code=$?
  if [ $code -ne 0 ]; then
    result FAIL batch_gitlab_parallel "gitlab-ci-local exit $code: $(tail -c 1500 "$work/gitlab.log")"
  else
    batch_check batch_gitlab_parallel "$proj/report.md" "$proj/report.xml"
  fi
fi
