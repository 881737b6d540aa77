# Sourced by run.sh after batch_common.sh: a Slurm job array on a one-node Slurm from
# Debian's packages (slurm-wlm, munge; installed with apt-get when missing). Every daemon
# runs from a temporary directory (its own munge key and socket, state, spool, logs, ports)
# and is stopped on the way out, so nothing of the host's own Slurm or munge is touched.
# `sbatch --wait --array=0-1` runs `batch run` per array task (the shard from
# SLURM_ARRAY_TASK_ID/_COUNT); `batch report` then merges both directories.
slurm_missing=""
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    slurm_missing="slurm-wlm and munge are not installed (and apt-get as root is not available)"
  elif ! DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends \
      slurm-wlm munge >"$work/slurm-apt.log" 2>&1; then
    slurm_missing="apt-get could not install slurm-wlm munge ($(tail -n1 "$work/slurm-apt.log"))"
  fi
fi
if [ -z "$slurm_missing" ] && [ "$(id -u)" != 0 ]; then
  slurm_missing="slurmd must run as root (this is uid $(id -u))"
fi

slurm_pids=()
slurm_stop() {
  for p in "${slurm_pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${slurm_pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  slurm_pids=()
}

slurm_run() {
  local d=$bwork/slurm host
  host=$(hostname)
  batch_remotes slurm
  mkdir -p "$d/state" "$d/spool" "$d/munge"
  chmod 700 "$d/munge"
  dd if=/dev/urandom of="$d/munge/munge.key" bs=1 count=1024 status=none
  chmod 600 "$d/munge/munge.key"
  munged -f --key-file="$d/munge/munge.key" --socket="$d/munge/sock" \
    --pid-file="$d/munge/pid" --log-file="$d/munge/log" --seed-file="$d/munge/seed" \
    >"$d/munged.out" 2>&1 || { slurm_why="munged did not start: $(tail -c 300 "$d/munged.out")"; return 1; }
  slurm_pids+=("$(cat "$d/munge/pid")")
  # Ports nobody else on this host is likely to use (not the 6817/6818 of a real Slurm).
  local base=$((20000 + RANDOM % 20000))
  cat >"$d/slurm.conf" <<CONF
ClusterName=agentexec
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=agentexec Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$d/slurm.conf
  slurmctld -D -i >"$d/slurmctld.out" 2>&1 &
  slurm_pids+=($!)
  slurmd -D >"$d/slurmd.out" 2>&1 &
  slurm_pids+=($!)
  local up=""
  for _ in $(seq 1 100); do
    sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)' && { up=1; break; }
    sleep 0.2
  done
  [ -n "$up" ] || { slurm_why="the node did not come up: $(sinfo -N 2>&1 | tail -n2); $(tail -c 400 "$d/slurmctld.log" "$d/slurmd.log" 2>&1)"; return 1; }

  # sbatch exports the whole environment, but the paths are simplest written in.
  cat >"$d/shard.sh" <<SH
#!/usr/bin/env bash
exec "$bin" batch run "$bwork/tasks-slurm.jsonl" --out "$d/out-\$SLURM_ARRAY_TASK_ID" --push \\
  --check 'test -e new.txt' -s workspace-write -c model_provider=scripted \\
  -c 'model_providers.scripted.script="$bwork/turns.json"'
SH
  chmod +x "$d/shard.sh"
  (cd "$d" && timeout 600 sbatch --wait --array=0-1 -o "$d/array-%a.log" "$d/shard.sh" \
    >"$d/sbatch.out" 2>&1)
  local code=$?
  [ $code -eq 0 ] || { slurm_why="sbatch --wait exit $code: $(cat "$d/sbatch.out"); $(tail -c 600 "$d"/array-*.log 2>&1)"; return 1; }
  for i in 0 1; do
    grep -q "^publish: [0-9]* pushed, 0 up to date, 0 not pushed$" "$d/array-$i.log" ||
      { slurm_why="array task $i did not push its branches: $(tail -c 600 "$d/array-$i.log")"; return 1; }
    grep -q "batch: shard $i/2 (Slurm" "$d/array-$i.log" ||
      { slurm_why="array task $i did not run shard $i/2: $(tail -c 600 "$d/array-$i.log")"; return 1; }
  done
  "$bin" batch report "$d/out-0" "$d/out-1" --manifest "$bwork/tasks-slurm.jsonl" >"$d/report.md" 2>"$d/report.err" &&
    "$bin" batch report "$d/out-0" "$d/out-1" --format junit >"$d/report.xml" 2>>"$d/report.err" ||
    { slurm_why="batch report: $(cat "$d/report.err")"; return 1; }
}

if [ -n "$slurm_missing" ]; then
  result SKIP batch_slurm_array "$slurm_missing"
else
  slurm_why=""
  (
    trap slurm_stop EXIT
    trap 'exit 143' TERM INT
    slurm_run || { echo "$slurm_why" >"$bwork/slurm.why"; exit 1; }
    # --push delivered each shard's branches, and publishing again pushes nothing.
    why=$(batch_delivered slurm again "$bwork/slurm/out-0" "$bwork/slurm/out-1")
    [ -z "$why" ] || { echo "$why" >"$bwork/slurm.why"; exit 1; }
  )
  if [ -s "$bwork/slurm.why" ]; then
    result FAIL batch_slurm_array "$(cat "$bwork/slurm.why")"
  else
    batch_check batch_slurm_array "$bwork/slurm/report.md" "$bwork/slurm/report.xml"
  fi
fi
