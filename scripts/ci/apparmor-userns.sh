#!/usr/bin/env bash
# Ubuntu 23.10+ (so the ubuntu-24.04 runners) set kernel.apparmor_restrict_unprivileged_userns=1:
# a process may still create a user namespace, but AppArmor strips its capabilities, so the
# sandbox's mount namespace (read-only .git, private /dev/shm; docs/SANDBOX.md) fails.
# agentexec still runs, since the layers that matter most hold: Landlock + seccomp still confine every
# command, and the run warns that .git is writable and /dev/shm unusable. To get the full
# sandbox this loads an AppArmor profile that grants `userns` to the agentexec binary only,
# the way Ubuntu does for browsers, instead of lifting the restriction for every program
# (sysctl -w kernel.apparmor_restrict_unprivileged_userns=0). Needs passwordless sudo (the
# hosted runners have it); without it, or without AppArmor, it says so and changes nothing.
set -euo pipefail
bin=${AGENTEXEC_BIN:?}
bin=$(readlink -f "$bin")
knob=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
if [ ! -r "$knob" ] || [ "$(cat "$knob")" != 1 ]; then
  echo "agentexec: unprivileged user namespaces are not restricted by AppArmor here" >&2
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! sudo -n true 2>/dev/null; then
    echo "::warning::agentexec: AppArmor restricts user namespaces and sudo is unavailable; commands run under Landlock + seccomp only (.git writable, no /dev/shm)"
    exit 0
  fi
  sudo="sudo -n"
fi
profile=/etc/apparmor.d/agentexec
# Path-attached and otherwise unconfined: the profile adds the one permission, nothing else.
printf '%s\n' 'abi <abi/4.0>,' 'include <tunables/global>' \
  "profile agentexec \"$bin\" flags=(unconfined) {" '  userns,' '}' |
  $sudo tee "$profile" >/dev/null
$sudo apparmor_parser -r "$profile"
echo "agentexec: loaded AppArmor profile $profile (userns for $bin)" >&2
