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
#  4. One line on stderr: how strong the sandbox is in this container (agentexec's own
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
for a in "$@"; do
  case $a in
    --) break ;;
    -h | --help | -V | --version) exec agentexec "$@" ;;
  esac
done

# 3. The image's default sandbox mode, only where nothing else chose one.
config=$(agentexec --print-config "$@" </dev/null 2>/dev/null) || config=
defaults=()
if grep -qx 'sandbox_mode = "read-only"  # default' <<<"$config"; then
  defaults=(-c 'sandbox_mode="workspace-write"')
fi

# 4. The sandbox this container allows (the preflight's warnings name what is missing).
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
