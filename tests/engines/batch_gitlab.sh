# Sourced by run.sh after batch_common.sh: GitLab `parallel: 2` through gitlab-ci-local
# (npm, pinned: 4.70.1 is the last release for Node 20) with the shell executor. The shard
# jobs of ci-examples/gitlab/batch-parallel.yml run `batch run` (the shard from
# CI_NODE_INDEX/CI_NODE_TOTAL) and keep out-N as an artifact; the report job, which needs
# them, merges the artifacts into Markdown and JUnit. Each task has a check, and the shards
# push their branches (--push) to remotes of this case's own; the merge-request job needs
# GITLAB_TOKEN and is left out here. gitlab-ci-local also validates the file against GitLab's
# JSON schema first.
gcl=$build/engines/gitlab-ci-local
. "$root/tests/engines/npm_install.sh"
gitlab_missing=""
[ -x "$gcl/node_modules/.bin/gitlab-ci-local" ] ||
  gitlab_missing=$(npm_install "$gcl" "$work/gcl-npm.log" gitlab-ci-local@4.70.1)

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
  # The shipped example itself, run with --force-shell-executor (no Docker here: its image:
  # is ignored), agentexec on PATH and the scripted model from AGENTEXEC_HOME's config; the
  # manifest at the path the example names holds the three local repositories.
  mkdir -p "$proj/ci-examples/batch" "$proj/bin" "$bwork/gcl-agent-home"
  batch_remotes gitlab
  cp "$bwork/tasks-gitlab.jsonl" "$proj/ci-examples/batch/manifest.jsonl"
  cp "$root/ci-examples/gitlab/batch-parallel.yml" "$proj/.gitlab-ci.yml"
  ln -sf "$bin" "$proj/bin/agentexec"
  printf 'model_provider = "scripted"\n[model_providers.scripted]\nscript = "%s"\n' \
    "$bwork/turns.json" >"$bwork/gcl-agent-home/config.toml"
  git -C "$proj" init -q && git -C "$proj" remote add origin https://gitlab.example.com/group/project.git &&
    git -C "$proj" add . &&
    git -C "$proj" -c user.name=t -c user.email=t@example.com commit -qm ci
  (cd "$proj" && PATH="$proj/bin:$PATH" AGENTEXEC_HOME="$bwork/gcl-agent-home" timeout 600 \
    "$gcl/node_modules/.bin/gitlab-ci-local" --force-shell-executor --shell-isolation \
    --home "$bwork/gcl-home" >"$work/gitlab.log" 2>&1)
  code=$?
  if [ $code -ne 0 ]; then
    result FAIL batch_gitlab_parallel "gitlab-ci-local exit $code: $(tail -c 1500 "$work/gitlab.log")"
  # gitlab-ci-local pads job names to the longest (merge-requests).
  elif ! grep -q 'agent: \[1/2\] *> batch: shard 0/2 (GitLab)' "$work/gitlab.log" ||
    ! grep -q 'agent: \[2/2\] *> batch: shard 1/2 (GitLab)' "$work/gitlab.log"; then
    result FAIL batch_gitlab_parallel "the parallel jobs did not run shards 0/2 and 1/2: $(grep -a 'batch: shard' "$work/gitlab.log")"
  elif why=$(batch_delivered gitlab once "$proj"/out-1 "$proj"/out-2) && [ -n "$why" ]; then
    result FAIL batch_gitlab_parallel "--push: $why"
  elif ! grep -q '| alpha | succeeded |  | passed in [0-9hms]* | 1 | 120 | [0-9hms]* | agentexec/alpha (pushed) |' "$proj/report.md"; then
    result FAIL batch_gitlab_parallel "the report does not show alpha's check and pushed branch: $(cat "$proj/report.md")"
  else
    batch_check batch_gitlab_parallel "$proj/report.md" "$proj/report.xml"
  fi
fi
