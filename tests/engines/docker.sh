# Sourced by run.sh: the image (Dockerfile, scripts/docker-entrypoint.sh) on the real Docker
# daemon, against tests/support/model_server.py on loopback (the containers share the host's
# network, which is all that the README's line gets added). Uses $root, $work, $pids and
# result from run.sh, and $gcl / $gitlab_missing from batch_gitlab.sh (gitlab-ci-local).
#  - the image: the runtime stage of the Dockerfile as shipped, on a local debian:12 (made
#    with debootstrap + docker import when absent), its binary the `make dist` tarball built
#    on this host (AGENTEXEC_DIST_TARBALL, else `make dist`) through the build argument
#    AGENTEXEC_TARBALL instead of compiling it again inside the build stage;
#  - the README's Docker line, exactly, in a workspace owned by uid 1001: the file is fixed on
#    the host, owned by 1001:1001, and the JSONL validates against schema/events.schema.json;
#  - --user 1001:1001, whose HOME is "/": the run still works, its session in a private HOME;
#  - a workspace the run cannot write (mounted :ro, or --user not its owner) and one mounted at
#    /src instead of /work: exit 2 before any request, the start-up line saying why;
#  - the one-line sandbox report for Docker's default seccomp profile, seccomp=unconfined,
#    seccomp=unconfined + systempaths=unconfined, and a profile that makes Landlock missing,
#    and in each a command writing outside /work is refused (without Landlock: exit 3, and
#    with -s danger-full-access the run goes ahead);
#  - the GitLab component (templates/agentexec.yml) and ci-examples/gitlab/docker-executor.yml
#    in gitlab-ci-local's Docker executor: the file fixed (changes.patch), the artifact's
#    events.jsonl valid, the job log showing the human progress as it goes.
. "$root/tests/engines/debian_image.sh"
dk=$work/docker
mkdir -p "$dk"
dk_image=agentexec-engines:test
dk_cases=(docker_image docker_readme_line docker_user_flag docker_workspace_read_only
  docker_workspace_not_owner docker_workspace_elsewhere docker_sandbox_default
  docker_sandbox_seccomp_unconfined docker_sandbox_full docker_sandbox_no_landlock
  docker_gitlab_component docker_gitlab_example)
dk_skip_all() { local c; for c in "${dk_cases[@]}"; do result SKIP "$c" "$1"; done; }

dk_missing=""
if [ "$(id -u)" != 0 ]; then
  dk_missing="the cases give workspaces to uid 1001 and root (chown): run as root"
elif ! debian12_image "$dk"; then
  dk_missing=$debian12_missing
fi

# dk_events_valid FILE: every line a JSON object valid against schema/events.schema.json
# (draft-04, as schema/README.md says); prints the first problem.
dk_events_valid() {
  python3 - "$root/schema/events.schema.json" "$1" <<'PY'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
v = jsonschema.Draft4Validator(schema)
lines = open(sys.argv[2]).read().splitlines()
if not lines:
    sys.exit("no events")
for n, line in enumerate(lines, 1):
    errors = list(v.iter_errors(json.loads(line)))
    if errors:
        sys.exit(f"line {n}: {errors[0].message}")
PY
}

# dk_serve NAME TURNS_JSON: the strict model server on 127.0.0.1 with these turns; sets
# dk_url (the base URL to give agentexec).
dk_serve() {
  printf '%s\n' "$2" >"$dk/$1.turns.json"
  rm -f "$dk/$1.port"
  python3 "$root/tests/support/model_server.py" --script "$dk/$1.turns.json" \
    --port-file "$dk/$1.port" --log-dir "$dk/$1.requests" --max-seconds 600 \
    >"$dk/$1.server.log" 2>&1 &
  pids+=($!)
  local _
  for _ in $(seq 1 100); do [ -s "$dk/$1.port" ] && break; sleep 0.1; done
  dk_url="http://127.0.0.1:$(cat "$dk/$1.port" 2>/dev/null)/v1"
}

# dk_workspace DIR UID:GID: a git repository whose build fails (build.sh wants ANSWER=42),
# owned by UID:GID.
dk_workspace() {
  rm -rf "$1" && mkdir -p "$1"
  printf 'ANSWER=41\n' >"$1/config.sh"
  printf '#!/bin/sh\n. ./config.sh\n[ "$ANSWER" = 42 ] || { echo "build: ANSWER is $ANSWER" >&2; exit 1; }\n' >"$1/build.sh"
  git -C "$1" init -q -b main && git -C "$1" add . &&
    git -C "$1" -c user.name=t -c user.email=t@example.com commit -qm init
  chown -R "$2" "$1"
}
# The scripted fix: a patch, the build, the answer.
dk_fix_turns='{"turns":[
  {"items":[{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Update File: config.sh\n@@\n-ANSWER=41\n+ANSWER=42\n*** End Patch"}]},
  {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"sh build.sh && echo build ok; echo \"home=$HOME\"; stat -c \"%a %u\" \"$HOME\"; ls \"$HOME/.agentexec/sessions\" | wc -l"}}]},
  {"items":[{"type":"message","text":"The build passes."}]}]}'

# dk_command_output FILE: the first command's aggregated output in a JSONL stream.
dk_command_output() {
  jq -r 'select(.type == "item.completed" and .item.type == "command_execution") | .item.aggregated_output' "$1" | head -c 4000
}
dk_report() { grep '^agentexec image: ' "$1"; }

if [ -n "$dk_missing" ]; then
  dk_skip_all "$dk_missing"
else
  # --- the image ---
  dk_why=""
  tarball=${AGENTEXEC_DIST_TARBALL:-}
  if [ -z "$tarball" ]; then
    if make -C "$root" dist JOBS="${JOBS:-2}" >"$dk/dist.log" 2>&1; then
      tarball=$root/$(grep -x 'dist/agentexec-.*\.tar\.gz' "$dk/dist.log" | tail -n1)
    else
      dk_why="make dist failed: $(tail -n3 "$dk/dist.log")"
    fi
  fi
  if [ -z "$dk_why" ] && [ ! -f "$tarball" ]; then dk_why="no dist tarball at $tarball"; fi
  if [ -z "$dk_why" ]; then
    # The build context: the source as `docker build .` gets it (.dockerignore applies: no
    # build trees, no dist/), plus the tarball where AGENTEXEC_TARBALL names it.
    ctx=$dk/context
    mkdir -p "$ctx/prebuilt"
    (cd "$root" && git ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
      xargs -0 cp --parents -t "$ctx")
    cp "$tarball" "$ctx/prebuilt/agentexec.tar.gz"
    mkdir -p "$dk/dist" && tar -xzf "$tarball" -C "$dk/dist" --strip-components=1
    want=$("$dk/dist/agentexec" --version)
    # Docker 20.10 without buildx: the classic builder, which builds every stage in order.
    if ! DOCKER_BUILDKIT=0 timeout 1200 docker build --build-arg BASE_TAG=12 \
      --build-arg AGENTEXEC_TARBALL=prebuilt/agentexec.tar.gz -t "$dk_image" "$ctx" \
      >"$dk/build.log" 2>&1; then
      dk_why="docker build failed: $(tail -n5 "$dk/build.log")"
    elif ! said=$(docker run --rm "$dk_image" --version 2>"$dk/version.err") || [ "$said" != "$want" ]; then
      dk_why="the image's agentexec says '$said' ($(cat "$dk/version.err")), not '$want'"
    fi
  fi
  if [ -n "$dk_why" ]; then
    result FAIL docker_image "$dk_why"
    for c in "${dk_cases[@]:1}"; do result SKIP "$c" "the image did not build"; done
  else
    result PASS docker_image

    # --- the README's line, in a workspace a non-root user owns ---
    readme=$(sed -n 's/^\*\*Docker\*\*: `\(docker run [^`]*\)`\.$/\1/p' "$root/README.md")
    placeholder=ghcr.io/OWNER/agentexec
    ws=$dk/ws-readme
    dk_workspace "$ws" 1001:1001
    dk_serve readme "$dk_fix_turns"
    if [[ "$readme" != "docker run --rm -v \"\$PWD:/work\" -e OPENAI_API_KEY $placeholder "* ]]; then
      result FAIL docker_readme_line "README.md's Docker line is not 'docker run --rm -v \"\$PWD:/work\" -e OPENAI_API_KEY $placeholder ...': '$readme'"
    else
      line=${readme/"$placeholder"/$dk_image}
      line=${line/docker run /docker run --network host -e OPENAI_BASE_URL=$dk_url }
      (cd "$ws" && export OPENAI_API_KEY=test-key && eval "$line") >"$dk/readme.out" 2>"$dk/readme.err"
      code=$?
      out=$(dk_command_output "$dk/readme.out")
      strangers=$(find "$ws" \( ! -user 1001 -o ! -group 1001 \) -printf '%p %u:%g\n' | head -5)
      if [ $code -ne 0 ]; then
        why="exit $code: $(tail -c 1500 "$dk/readme.err")"
      elif [ "$(cat "$ws/config.sh")" != "ANSWER=42" ]; then
        why="config.sh was not fixed on the host: $(cat "$ws/config.sh")"
      elif [ "$(stat -c %u:%g "$ws/config.sh")" != 1001:1001 ] || [ -n "$strangers" ]; then
        why="files not owned by the workspace's owner 1001:1001: $(stat -c '%n %u:%g' "$ws/config.sh") $strangers"
      elif ! schema_err=$(dk_events_valid "$dk/readme.out" 2>&1); then
        why="the JSONL does not validate: $schema_err"
      elif [[ "$out" != "build ok"* ]]; then
        why="the build did not pass in the container: $out"
      elif [ "$(dk_report "$dk/readme.err" | wc -l)" != 1 ]; then
        why="not one sandbox line on stderr: $(head -c 1500 "$dk/readme.err")"
      else
        why=""
      fi
      if [ -z "$why" ]; then result PASS docker_readme_line; else result FAIL docker_readme_line "$why"; fi
      echo "  ran: $line" >&2
    fi

    # --- --user 1001:1001: HOME is "/", which that user cannot write ---
    ws=$dk/ws-user
    dk_workspace "$ws" 1001:1001
    dk_serve user "$dk_fix_turns"
    (cd "$ws" && export OPENAI_API_KEY=test-key && docker run --rm --network host --user 1001:1001 -v "$PWD:/work" \
      -e OPENAI_API_KEY -e OPENAI_BASE_URL="$dk_url" "$dk_image" --json "fix the build") \
      >"$dk/user.out" 2>"$dk/user.err"
    code=$?
    out=$(dk_command_output "$dk/user.out")
    # The build, then HOME: a fresh directory under /var/tmp, mode 0700, uid 1001's, holding
    # the session.
    nl=$'\n'
    private_home="^build ok${nl}home=/var/tmp/agentexec-home\.[A-Za-z0-9]{8}${nl}700 1001${nl}1\$"
    if [ $code -ne 0 ]; then
      why="exit $code: $(tail -c 1500 "$dk/user.err")"
    elif [ "$(cat "$ws/config.sh")" != "ANSWER=42" ] || [ "$(stat -c %u:%g "$ws/config.sh")" != 1001:1001 ]; then
      why="config.sh: $(cat "$ws/config.sh") $(stat -c %u:%g "$ws/config.sh")"
    elif ! [[ "$out" =~ $private_home ]]; then
      why="HOME is not a private directory of uid 1001 holding the session: $out"
    elif ! schema_err=$(dk_events_valid "$dk/user.out" 2>&1); then
      why="the JSONL does not validate: $schema_err"
    else
      why=""
    fi
    if [ -z "$why" ]; then result PASS docker_user_flag; else result FAIL docker_user_flag "$why"; fi

    # --- workspaces the run cannot use: exit 2 with the one line, no model request ---
    ws=$dk/ws-unusable
    dk_workspace "$ws" 1001:1001
    dk_serve unusable "$dk_fix_turns"
    ro_line='agentexec image: workspace: /work cannot be written: it is mounted read-only (mount it read-write, or run with -s read-only)'
    owner_line='agentexec image: workspace: /work cannot be written: uid 1002 may not write it, it belongs to uid 1001 (run as its owner: drop --user, or --user 1001:1001; or run with -s read-only)'
    src_line="agentexec image: workspace: /work is empty and nothing is mounted there: mount the repository at /work, the image's working directory (docker run -v \"\$PWD:/work\" ...); /src is mounted: use -v \"\$PWD:/work\" instead, or -w /src"
    for spec in "docker_workspace_read_only|-v $ws:/work:ro|$ro_line" \
      "docker_workspace_not_owner|--user 1002:1002 -v $ws:/work|$owner_line" \
      "docker_workspace_elsewhere|-v $ws:/src|$src_line"; do
      IFS='|' read -r name opts want <<<"$spec"
      # shellcheck disable=SC2086  # opts is a list of words
      docker run --rm --network host $opts -e OPENAI_API_KEY=test-key -e OPENAI_BASE_URL="$dk_url" \
        "$dk_image" --json "fix the build" >"$dk/$name.out" 2>"$dk/$name.err"
      code=$?
      got=$(dk_report "$dk/$name.err")
      if [ $code -ne 2 ]; then
        why="exit $code, not 2: $(tail -c 800 "$dk/$name.err")"
      elif [ "$got" != "$want" ]; then
        why="the start-up line is '$got', not '$want'"
      elif [ -s "$dk/$name.out" ] || [ -n "$(ls -A "$dk/unusable.requests" 2>/dev/null)" ]; then
        why="the run went ahead: $(head -c 400 "$dk/$name.out")"
      else
        why=""
      fi
      if [ -z "$why" ]; then result PASS "$name"; else result FAIL "$name" "$why"; fi
    done
    if [ "$(cat "$ws/config.sh")" != "ANSWER=41" ]; then
      result FAIL docker_workspace_read_only "the unusable workspace was changed: $(cat "$ws/config.sh")"
    fi

    # --- the sandbox report, and a write outside /work refused, per security option ---
    # As root (a root-owned workspace), so that only the sandbox refuses the write to /opt.
    printf '%s\n' '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["landlock_create_ruleset"],"action":"SCMP_ACT_ERRNO","errnoRet":38}]}' \
      >"$dk/no-landlock.json"
    dk_outside_turns='{"turns":[
      {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"echo x > inside.txt; echo x > /opt/outside.txt; echo status=$?; test -e /opt/outside.txt && echo written || echo absent"}}]},
      {"items":[{"type":"message","text":"tried"}]}]}'
    partial_mount='agentexec image: sandbox: partial: Landlock, seccomp; no mount or PID namespace (.git writable, no private /dev/shm, host sockets reachable, leftover processes not ended): docker run --security-opt seccomp=unconfined --security-opt systempaths=unconfined adds them'
    partial_pid='agentexec image: sandbox: partial: Landlock, seccomp, mount namespace; no PID namespace (processes a command leaves running can outlive it): docker run --security-opt systempaths=unconfined adds it'
    full='agentexec image: sandbox: full: Landlock, seccomp, mount and PID namespaces'
    none='agentexec image: sandbox: none: cannot enforce workspace-write: Landlock is not supported by this kernel (landlock_create_ruleset: Function not implemented). Run with -s danger-full-access where the container is the boundary, or enable Landlock (CONFIG_SECURITY_LANDLOCK, lsm=landlock).; agentexec exits 3 unless run with -s danger-full-access'
    danger_line='agentexec image: sandbox: none: danger-full-access was chosen, so the container is the boundary'
    for spec in "docker_sandbox_default||$partial_mount" \
      "docker_sandbox_seccomp_unconfined|--security-opt seccomp=unconfined|$partial_pid" \
      "docker_sandbox_full|--security-opt seccomp=unconfined --security-opt systempaths=unconfined|$full" \
      "docker_sandbox_no_landlock|--security-opt seccomp=$dk/no-landlock.json|$none"; do
      IFS='|' read -r name opts want <<<"$spec"
      ws=$dk/ws-$name
      dk_workspace "$ws" 0:0
      dk_serve "$name" "$dk_outside_turns"
      # shellcheck disable=SC2086  # opts is a list of words
      (cd "$ws" && export OPENAI_API_KEY=test-key && docker run --rm --network host $opts -v "$PWD:/work" -e OPENAI_API_KEY \
        -e OPENAI_BASE_URL="$dk_url" "$dk_image" --json "write outside") \
        >"$dk/$name.out" 2>"$dk/$name.err"
      code=$?
      got=$(dk_report "$dk/$name.err")
      out=$(dk_command_output "$dk/$name.out")
      if [ "$got" != "$want" ]; then
        why="the sandbox line is '$got', not '$want'"
      elif [ "$name" = docker_sandbox_no_landlock ]; then
        # Exit 3 before the turn; then, told -s danger-full-access, the run goes ahead unconfined.
        (cd "$ws" && export OPENAI_API_KEY=test-key && docker run --rm --network host $opts \
          -v "$PWD:/work" -e OPENAI_API_KEY -e OPENAI_BASE_URL="$dk_url" "$dk_image" --json \
          -s danger-full-access "write outside") >"$dk/$name.danger.out" 2>"$dk/$name.danger.err"
        danger=$?
        if [ $code -ne 3 ]; then
          why="exit $code, not 3: $(tail -c 800 "$dk/$name.err")"
        elif [ $danger -ne 0 ] || [ ! -f "$ws/inside.txt" ] ||
          [ "$(dk_report "$dk/$name.danger.err")" != "$danger_line" ]; then
          why="with -s danger-full-access: exit $danger, line '$(dk_report "$dk/$name.danger.err")': $(tail -c 800 "$dk/$name.danger.err")"
        else
          why=""
        fi
      elif [ $code -ne 0 ]; then
        why="exit $code: $(tail -c 1500 "$dk/$name.err")"
      elif [ ! -f "$ws/inside.txt" ] || [[ "$out" != *$'status=1\nabsent'* ]]; then
        why="the write outside /work was not refused (or the one inside failed): $out"
      else
        why=""
      fi
      if [ -z "$why" ]; then result PASS "$name"; else result FAIL "$name" "$why"; fi
      echo "  $name: $got" >&2
    done

    # --- the GitLab component, and the Docker-executor example, in gitlab-ci-local's Docker
    # executor ---
    if [ -z "${gcl:-}" ] || [ -n "${gitlab_missing:-}" ] || [ ! -x "$gcl/node_modules/.bin/gitlab-ci-local" ]; then
      for c in docker_gitlab_component docker_gitlab_example; do
        result SKIP "$c" "${gitlab_missing:-gitlab-ci-local is not installed (batch_gitlab.sh installs it)}"
      done
    else
      # gitlab-ci-local's helper image (it chowns the job's volume and copies the artifacts
      # out with bash and rsync) made locally from debian:12: nothing is pulled from a
      # registry. The job's container shares the host's network to reach the model server.
      helper=agentexec-engines:gcl-helper
      helper_why=""
      printf 'FROM debian:12\nRUN apt-get update -qq && apt-get install -y -qq --no-install-recommends rsync && rm -rf /var/lib/apt/lists/*\n' |
        DOCKER_BUILDKIT=0 timeout 600 docker build -t "$helper" - >"$dk/helper.log" 2>&1 ||
        helper_why="the helper image did not build: $(tail -n3 "$dk/helper.log")"
      for name in docker_gitlab_component docker_gitlab_example; do
        proj=$dk/$name
        dk_workspace "$proj" 0:0
        dk_serve "$name" "$dk_fix_turns"
        if [ "$name" = docker_gitlab_component ]; then
          job=agentexec
          mkdir -p "$proj/templates"
          cp "$root/templates/agentexec.yml" "$proj/templates/"
          # As a project includes it (a local include: no GitLab to fetch it from), with the
          # image built above and the loopback model server.
          printf 'include:\n  - local: templates/agentexec.yml\n    inputs:\n      prompt: fix the build\n      image: %s\n      version: %s\n      base-url: %s\n' \
            "${dk_image%:*}" "${dk_image#*:}" "$dk_url" >"$proj/.gitlab-ci.yml"
          vars=(--variable OPENAI_API_KEY=test-key)
        else
          # The example as shipped, but for its image; the key and base URL as CI variables.
          job=agent
          sed "s#ghcr.io/OWNER/agentexec:[0-9.]*#$dk_image#" "$root/ci-examples/gitlab/docker-executor.yml" \
            >"$proj/.gitlab-ci.yml"
          vars=(--variable OPENAI_API_KEY=test-key --variable OPENAI_BASE_URL="$dk_url")
        fi
        git -C "$proj" remote add origin https://gitlab.example.com/group/project.git &&
          git -C "$proj" add . && git -C "$proj" -c user.name=t -c user.email=t@example.com commit -qm ci
        log=$dk/$name.log
        code=$helper_why
        if [ -z "$code" ]; then
          (cd "$proj" && timeout 900 "$gcl/node_modules/.bin/gitlab-ci-local" --network host \
            --helper-image "$helper" --pull-policy if-not-present "${vars[@]}" \
            --home "$dk/gcl-home" --no-color) >"$log" 2>&1
          code=$?
        fi
        art=$proj/agentexec-out
        if [ "$code" != 0 ]; then
          why="gitlab-ci-local: $code: $(tail -c 2000 "$log" 2>/dev/null)"
        elif [ "$(cat "$art/exit-code" 2>/dev/null)" != 0 ]; then
          why="the artifact's exit-code is '$(cat "$art/exit-code" 2>/dev/null)': $(tail -c 1500 "$log")"
        elif ! grep -q '^+ANSWER=42$' "$art/changes.patch" 2>/dev/null; then
          why="changes.patch does not fix config.sh: $(head -c 800 "$art/changes.patch" 2>&1)"
        elif ! schema_err=$(dk_events_valid "$art/events.jsonl" 2>&1); then
          why="the artifact's events.jsonl does not validate: $schema_err"
        elif ! grep -q "^$job *> patch: completed\$" "$log" ||
          ! grep -q "^$job *> /bin/bash -lc 'sh build.sh" "$log" ||
          ! grep -q "^$job *> The build passes\.\$" "$log"; then
          why="the job log lacks the human progress lines: $(grep -a "^$job" "$log" | head -c 2000)"
        else
          why=""
        fi
        if [ -z "$why" ]; then result PASS "$name"; else result FAIL "$name" "$why"; fi
      done
    fi
  fi
fi
