#!/usr/bin/env bash
# make test-fresh: the README's set-up on a bare Debian 12, as a newcomer meets it. A
# debian:12 image made by debootstrap (--variant=minbase, tests/engines/debian_image.sh) runs
# in a container as close to a machine as the host allows (every capability the host itself
# has, no seccomp or AppArmor profile, /proc and /sys unmasked: --privileged asks for
# capabilities a VM may withhold, and then fails). It is the newcomer's machine: its /tmp is
# overlayfs, it has no git identity, no PYTHONDONTWRITEBYTECODE, nothing but the minimal base. The two code blocks of
# the README's "Set-up" section are taken from the README of the commit under test, so the
# README and this test cannot drift: the first block (the prerequisite) runs as root, then the
# repository is cloned and the second block runs line by line in the clone. Asserted:
#  - every line exits 0;
#  - the `make demo` line's stdout is JSON Lines ending in turn.completed, and the demo's
#    project tests pass when this script runs them itself afterwards;
#  - the `make test` line's ctest runs (the sanitized suite and the release half) each end in
#    "100% tests passed", and, as root, no test was skipped or not run (as a user, the tests
#    that switch users skip and are listed).
# Two machines: as root with the clone in /root (mode 0700), then as a user with sudo, clone
# in its $HOME (FRESH_MODES="root user", the default). Each prints its steps' times.
#   tests/engines/fresh_machine.sh [OUT_DIR]      (default build/fresh)
# The commit under test is HEAD: uncommitted changes are not in the clone.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:-$root/build/fresh}" && cd "${1:-$root/build/fresh}" && pwd)
modes=${FRESH_MODES:-root user}
. "$root/tests/engines/debian_image.sh"

pass=0 fail=0 skip=0
result() {  # result PASS|FAIL|SKIP name [why]
  echo "$1 $2${3:+: $3}"
  case $1 in PASS) pass=$((pass + 1)) ;; FAIL) fail=$((fail + 1)) ;; SKIP) skip=$((skip + 1)) ;; esac
}
finish() {
  echo "fresh: $pass passed, $fail failed, $skip skipped"
  [ $fail -eq 0 ]
  exit
}

if ! debian12_image "$out/image"; then
  for m in $modes; do result SKIP "fresh_$m" "$debian12_missing"; done
  finish
fi

# The README's set-up blocks: the indented lines of the "## Set-up" section, block by block.
commit=$(git -C "$root" rev-parse HEAD)
git -C "$root" show "$commit:README.md" | awk '
  /^## / { in_setup = ($0 ~ /^## Set-up/) ; next }
  in_setup && /^    [^ ]/ { sub(/^    /, ""); print block ": " $0; seen = 1; next }
  in_setup && seen && !/^    / { block++; seen = 0 }
' block=1 >"$out/setup-lines"
prereq=$(sed -n 's/^1: //p' "$out/setup-lines")
mapfile -t steps < <(sed -n 's/^2: //p' "$out/setup-lines")
if [ -z "$prereq" ] || [ ${#steps[@]} -eq 0 ]; then
  result FAIL fresh_readme "no set-up blocks found in README.md's \"## Set-up\" section"
  finish
fi
echo "commit $commit; prerequisite: $prereq; then: $(printf '[%s] ' "${steps[@]}")"

# A bare clone of the commit, mounted read-only: the container clones from it as a user
# clones from the forge.
rm -rf "$out/src.git"
git clone -q --bare --no-local --single-branch "$root" "$out/src.git"
git -C "$out/src.git" update-ref HEAD "$commit"

# The options that make the container a machine: every capability this host has (a VM may
# withhold some, e.g. CAP_SYS_RESOURCE, and --privileged then fails), no profiles.
machine_options() {
  local opts="--cap-add ALL"
  # The capabilities this process may not hold, by number (CapBnd's clear bits up to 40).
  local bnd=$((16#$(awk '/^CapBnd/ { print $2 }' /proc/self/status))) n
  local names=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
    LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER
    SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE
    SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP
    MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF
    CHECKPOINT_RESTORE)
  for n in "${!names[@]}"; do
    (((bnd >> n) & 1)) || opts+=" --cap-drop ${names[$n]}"
  done
  echo "$opts --security-opt seccomp=unconfined --security-opt apparmor=unconfined" \
    "--security-opt systempaths=unconfined"
}

# This site's network: the registries are reached through a proxy whose TLS CA the host
# trusts (/usr/local/share/ca-certificates). A machine here has it as the host does, so the
# container gets the same CAs, as a file NODE_EXTRA_CA_CERTS names (npm's client reads it);
# apt uses plain HTTP. Nothing of the project is given this way.
site_ca=""
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cat /usr/local/share/ca-certificates/*.crt >"$out/site-ca.pem"
  site_ca=$out/site-ca.pem
fi

# run_machine MODE: one fresh container; its logs in $out/MODE.
run_machine() {
  local mode=$1 dir=$out/$1
  rm -rf "$dir" && mkdir -p "$dir" && chmod 0777 "$dir"
  printf '%s\n' "${steps[@]}" >"$dir/steps"
  printf '%s\n' "$prereq" >"$dir/prereq"
  # Inside: the admin's part (root), then the newcomer's part, each line timed, stdout and
  # stderr kept apart (the demo's stdout is the JSONL).
  cat >"$dir/machine.sh" <<'SH'
set -u
mode=$1
SITE=""
[ -f /site-ca.pem ] && SITE="NODE_EXTRA_CA_CERTS=/site-ca.pem"
cd /
if [ "$mode" = user ]; then
  # The machine's admin gave the newcomer sudo; the newcomer runs the prerequisite with it.
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends sudo &&
    useradd -m -s /bin/bash newcomer &&
    echo 'newcomer ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/newcomer &&
    # The forge's copy, readable by the newcomer as a remote is (git refuses a local
    # repository another user owns).
    cp -a /src.git /srv/agentexec.git && chown -R newcomer /srv/agentexec.git; } \
    >/out/admin.log 2>&1 ||
    { echo "admin set-up failed" >/out/prereq.rc; exit 1; }
  as() { runuser -u newcomer -- env -i HOME=/home/newcomer USER=newcomer LOGNAME=newcomer \
    PATH=/usr/local/bin:/usr/bin:/bin SHELL=/bin/bash $SITE bash -c "$1"; }
  as "sudo sh -c \"\$(cat /out/prereq)\"" </dev/null >/out/prereq.out 2>/out/prereq.err
  echo $? >/out/prereq.rc
else
  as() { env -i HOME=/root USER=root LOGNAME=root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    SHELL=/bin/bash $SITE bash -c "$1"; }
  bash -c "$(cat /out/prereq)" </dev/null >/out/prereq.out 2>/out/prereq.err
  echo $? >/out/prereq.rc
fi
[ "$(cat /out/prereq.rc)" = 0 ] || exit 1
src=/src.git
[ "$mode" = user ] && src=/srv/agentexec.git
as "cd && git clone -q $src agentexec" </dev/null >/out/clone.log 2>&1 || { echo clone failed >>/out/clone.log; exit 1; }
n=0
while IFS= read -r line; do
  n=$((n + 1))
  start=$(date +%s)
  as "cd ~/agentexec && $line" </dev/null >/out/step$n.out 2>/out/step$n.err
  echo "$? $(( $(date +%s) - start ))" >/out/step$n.rc
done </out/steps
# The demo's own project, checked by its tests here, whatever the demo said.
as 'cd ~/agentexec/.demo/repo && python3 -m unittest' </dev/null >/out/demo-check.out 2>&1
echo $? >/out/demo-check.rc
SH
  local started=$SECONDS
  docker run --rm $(machine_options) --name "agentexec-fresh-$mode-$$" \
    -v "$out/src.git:/src.git:ro" -v "$dir:/out" ${site_ca:+-v "$site_ca:/site-ca.pem:ro"} \
    debian:12 bash /out/machine.sh "$mode" \
    >"$dir/docker.log" 2>&1
  local took=$((SECONDS - started))
  if [ "$(cat "$dir/prereq.rc" 2>/dev/null)" != 0 ]; then
    result FAIL "fresh_$mode" "the prerequisite failed ($(cat "$dir/prereq.rc" 2>/dev/null)): $(tail -c 600 "$dir/prereq.err" "$dir/admin.log" 2>/dev/null)"
    return
  fi
  if [ ! -f "$dir/step1.rc" ]; then
    result FAIL "fresh_$mode" "the clone failed: $(tail -c 600 "$dir/clone.log") $(tail -c 300 "$dir/docker.log")"
    return
  fi
  local n=0 line rc secs problems=""
  for line in "${steps[@]}"; do
    n=$((n + 1))
    read -r rc secs <"$dir/step$n.rc"
    echo "  $mode: \`$line\`: exit $rc, $((secs / 60)) min $((secs % 60)) s"
    [ "$rc" = 0 ] || problems+="\`$line\` exited $rc: $(tail -c 1500 "$dir/step$n.err" | tr '\n' ' ')
"
    case $line in
      "make demo"*)
        local bad
        bad=$(python3 - "$dir/step$n.out" <<'PY'
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
for i, line in enumerate(lines, 1):
    try:
        obj = json.loads(line)
    except ValueError as e:
        sys.exit(f"stdout line {i} is not JSON ({e}): {line[:200]}")
    if not isinstance(obj, dict):
        sys.exit(f"stdout line {i} is not an object")
if not lines or json.loads(lines[-1]).get("type") != "turn.completed":
    sys.exit("the stream does not end in turn.completed")
PY
        ) || problems+="the demo's JSONL: $bad
"
        [ "$(cat "$dir/demo-check.rc")" = 0 ] ||
          problems+="the demo's project tests fail when run after it: $(tail -c 600 "$dir/demo-check.out")
"
        ;;
      "make test"*)
        local ran
        ran=$(grep -cE '^100% tests passed, 0 tests failed out of [0-9]+' "$dir/step$n.out")
        [ "$ran" -ge 2 ] ||
          problems+="\`$line\`: $ran ctest run(s) ended in 100% passed, expected the sanitized suite and the release half
"
        grep -E 'tests passed|tests failed out of|Total Test time' "$dir/step$n.out" | sed "s/^/  $mode: /"
        # As root every test runs. As a user, the tests that switch to another user (nobody,
        # uid 1001) need root and skip, saying so: listed, not failed.
        local skipped
        skipped=$(grep -E '\*\*\*Skipped|\*\*\*Not Run' "$dir/step$n.out" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .*/\1/')
        if [ -n "$skipped" ] && [ "$mode" = root ]; then
          problems+="tests did not run: $(echo "$skipped" | head -20 | tr '\n' ' ')
"
        elif [ -n "$skipped" ]; then
          echo "  $mode: $(echo "$skipped" | wc -l) tests skipped (they need root): $(echo "$skipped" | tr '\n' ' ')"
        fi
        ;;
    esac
  done
  echo "  $mode: the whole machine took $((took / 60)) min $((took % 60)) s"
  if [ -n "$problems" ]; then
    result FAIL "fresh_$mode" "$problems(logs: $dir)"
  else
    result PASS "fresh_$mode"
  fi
}

for m in $modes; do
  case $m in
    root | user) run_machine "$m" ;;
    *) result FAIL "fresh_$m" "unknown mode (root, user)" ;;
  esac
done
finish
