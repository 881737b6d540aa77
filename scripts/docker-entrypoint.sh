#!/usr/bin/env bash
# The image's entrypoint (Dockerfile): makes `docker run --rm -v "$PWD:/work" -e
# OPENAI_API_KEY IMAGE "fix the build"` do what it says, then execs agentexec with the
# arguments as given. docs/CI.md, "In a container", describes each step.
#  1. Whose files: started as root (the image has no USER), it becomes the owner of the
#     working directory (the mounted workspace, /work), so what the run writes belongs to the
#     person who mounted it; with no extra groups. A root-owned workspace runs as root; with
#     `docker run --user U:G` it runs as given.
#  2. HOME: unless $HOME is a writable directory this user owns (with --user it is "/"; after
#     step 1, root's), a fresh private one (mode 0700) outside the workspace and outside /tmp,
#     which the sandbox lets commands write.
#  3. The sandbox mode: a run whose configuration chooses none (no -s, --full-auto, --yolo,
#     -c sandbox_mode, nor a config file's sandbox_mode) gets workspace-write: the image
#     chooses it, as a -c placed before the user's arguments, so everything the user gives
#     still wins. agentexec's own --print-config answers whether anything chose one. A
#     project's .agentexec/config.toml cannot loosen the mode (agentexec ignores a project
#     file's looser sandbox_mode), so it cannot turn this default into danger-full-access.
#  4. The workspace (exit 2, as for a directory that is not a git repository, with one line
#     saying what to do): an empty working directory with nothing mounted there (the
#     repository mounted elsewhere, say at /src) is named, and so is one the run cannot write
#     (mounted read-only, or `--user` not its owner) unless the run is read-only.
#  5. One line on stderr: how strong the sandbox is in this container (agentexec's own
#     preflight, through `agentexec sandbox -- true`), and the `docker run` option that adds
#     what is missing.
# Not for `sandbox`, `review`, `batch`, `schema`, `help`, -h or -V: those pass through as
# they are (after steps 1 and 2).
set -euo pipefail

say() { echo "agentexec image: $*" >&2; }

# 1. Become the workspace's owner.
if [ "$(id -u)" = 0 ]; then
  owner=$(stat -c '%u:%g' .) || { say "cannot stat the working directory"; exit 2; }
  if [ "${owner%%:*}" != 0 ]; then
    exec setpriv --reuid="${owner%%:*}" --regid="${owner#*:}" --clear-groups -- "$0" "$@"
  fi
fi

# 2. A usable HOME: the session and the user configuration live under it.
if ! { [ -n "${HOME:-}" ] && [ -d "$HOME" ] && [ -O "$HOME" ] && [ -w "$HOME" ] && [ -x "$HOME" ]; }; then
  home=
  for base in /var/tmp "${TMPDIR:-/tmp}"; do
    home=$(mktemp -d "$base/agentexec-home.XXXXXXXX" 2>/dev/null) && break
  done
  [ -n "$home" ] || { say "no writable directory for HOME (/var/tmp, ${TMPDIR:-/tmp})"; exit 2; }
  export HOME=$home
fi

# Which command: the sandbox mode and the report are for runs (a prompt, exec, resume).
first=${1:-}
[ "$first" = exec ] && first=${2:-}
case $first in
  sandbox | review | batch | schema | help) exec agentexec "$@" ;;
esac
workspace=$PWD
printing=
previous=
for a in "$@"; do
  case $previous in -C | --cd) workspace=$a ;; esac
  case $a in
    --) break ;;
    -h | --help | -V | --version) exec agentexec "$@" ;;
    --print-config | --print-writable-roots) printing=1 ;;
    --cd=*) workspace=${a#--cd=} ;;
    -C?*) workspace=${a#-C} ;;
  esac
  previous=$a
done

# 3. The image's default sandbox mode, only where nothing else chose one.
config=$(agentexec --print-config "$@" </dev/null 2>/dev/null) || config=
defaults=()
if grep -qx 'sandbox_mode = "read-only"  # default' <<<"$config"; then
  defaults=(-c 'sandbox_mode="workspace-write"')
fi

# 4. The workspace. A mount point is field 5 of mountinfo (spaces escaped as \040).
mounted() { awk -v d="$1" '$5 == d { found = 1 } END { exit !found }' /proc/self/mountinfo 2>/dev/null; }
if [ -z "$printing" ] && [ -d "$workspace" ] && [ -z "$(ls -A "$workspace" 2>/dev/null)" ] &&
  ! mounted "$(cd "$workspace" && pwd -P)"; then
  # Where the repository went instead: a directory mounted directly under / that is no part
  # of the image.
  elsewhere=$(awk '$5 ~ "^/[^/]+$" { print $5 }' /proc/self/mountinfo 2>/dev/null |
    grep -vxE '/(proc|sys|dev|etc|run|tmp|var|usr|boot|home|root|work|lib|lib64|bin|sbin|opt|srv|mnt|media)' |
    head -n1 || true)
  say "workspace: $workspace is empty and nothing is mounted there: mount the repository at /work, the image's working directory (docker run -v \"\$PWD:/work\" ...)${elsewhere:+; $elsewhere is mounted: use -v \"\$PWD:/work\" instead, or -w $elsewhere}"
  exit 2
fi
mode=$(sed -n 's/^sandbox_mode = "\([^"]*\)".*/\1/p' <<<"$config")
[ ${#defaults[@]} -gt 0 ] && mode=workspace-write
if [ -z "$printing" ] && [ -d "$workspace" ] && [ "$mode" != read-only ] && [ ! -w "$workspace" ]; then
  if awk -v d="$(cd "$workspace" && pwd -P)" '$5 == d && $6 ~ /(^|,)ro(,|$)/ { found = 1 } END { exit !found }' \
    /proc/self/mountinfo 2>/dev/null; then
    why="it is mounted read-only (mount it read-write, or run with -s read-only)"
  else
    why="uid $(id -u) may not write it, it belongs to uid $(stat -c %u "$workspace") (run as its owner: drop --user, or --user $(stat -c %u:%g "$workspace"); or run with -s read-only)"
  fi
  say "workspace: $workspace cannot be written: $why"
  exit 2
fi

# 5. The sandbox this container allows (the preflight's warnings name what is missing).
probe=0
if grep -q '^sandbox_mode = "danger-full-access"' <<<"$config"; then
  probe=none
else
  report=$(agentexec sandbox -s workspace-write -- true </dev/null 2>&1 >/dev/null) || probe=$?
fi
if [ "$probe" = none ]; then
  say "sandbox: none: danger-full-access was chosen, so the container is the boundary"
elif [ "$probe" = 3 ]; then
  reason=$(printf '%s\n' "$report" | grep -m1 '^sandbox: cannot enforce' || printf '%s\n' "$report" | tail -n1)
  say "sandbox: none: ${reason#sandbox: }; agentexec exits 3 unless run with -s danger-full-access"
elif [ "$probe" != 0 ]; then
  say "sandbox: unknown: the probe exited $probe: $(printf '%s' "$report" | tail -n1)"
else
  no_mount=$(printf '%s\n' "$report" | grep -m1 -o 'could not create a mount namespace (.*)' || true)
  no_pid=$(printf '%s\n' "$report" | grep -m1 -o 'could not create a PID namespace (.*)' || true)
  seccomp=$(sed -n 's/^Seccomp:[[:space:]]*//p' /proc/self/status 2>/dev/null)
  if [ -z "$no_mount" ] && [ -z "$no_pid" ]; then
    say "sandbox: full: Landlock, seccomp, mount and PID namespaces"
  elif [ -n "$no_mount" ]; then
    # Docker's default seccomp profile refuses unshare(CLONE_NEWUSER) to a process without
    # CAP_SYS_ADMIN; without a seccomp filter the cause is elsewhere (say, the host kernel's
    # user namespace settings), and agentexec's own reason is shown.
    if [ "$seccomp" = 2 ]; then
      fix="docker run --security-opt seccomp=unconfined --security-opt systempaths=unconfined adds them"
    else
      fix="${no_mount#could not create a }"
    fi
    say "sandbox: partial: Landlock, seccomp; no mount or PID namespace (.git writable, no private /dev/shm, host sockets reachable, leftover processes not ended): $fix"
  else
    # Docker masks paths under /proc (/proc/kcore, ...) with mounts; the kernel then refuses a
    # new proc mount, which the PID namespace needs.
    if grep -q ' /proc/[^ ]' /proc/self/mountinfo 2>/dev/null; then
      fix="docker run --security-opt systempaths=unconfined adds it"
    else
      fix="${no_pid#could not create a }"
    fi
    say "sandbox: partial: Landlock, seccomp, mount namespace; no PID namespace (processes a command leaves running can outlive it): $fix"
  fi
fi

exec agentexec "${defaults[@]}" "$@"
