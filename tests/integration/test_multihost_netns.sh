#!/usr/bin/env bash
# Runs across hosts that share nothing but a network and a file system
# (netns_hosts_fixture.sh: node1 and node2, each its own network namespace,
# address, host name and sshd), through the launcher's ssh profile (mpirun on
# node1 starting node2's ranks over ssh) and its Slurm profile (slurmctld on
# node1, one slurmd per host, mpirun inside the batch job), OpenMPI's TCP
# transport only. The series and the outputs live on a shared folder.
# Checks: the drift equals a single-host run within 0.01 px; killing node2's
# ranks, or taking node2's link down, ends the job within 10 s with one line
# naming node2; --resume afterwards completes with the same drift.
# Skipped (77) where network namespaces cannot be made.
set -uo pipefail
. "$(dirname "$0")/common.sh"
require_programs sshd ssh ssh-keygen ip unshare python3
. "$TESTS_DIR/netns_hosts_fixture.sh"
export PATH="$PATH:/usr/sbin"
chmod 755 "$WORK"
netns_hosts_start 2 || die "could not build the hosts"
echo "hosts up: ${NETNS_HOSTS[*]} on $NETNS_SUBNET"

within() { awk -v d="$1" 'BEGIN { exit !(d != "" && d <= 0.01) }'; }
engines_on() { for p in $(host_pids "$1"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = driftscan-engin ] && echo "$p"; done; }
has_checkpoint() { ls "$1"/checkpoint*.dsck >/dev/null 2>&1; }
# The launcher runs on the login host, as a user's desktop would.
launch() { host_exec login "$LAUNCH" "$@"; }

SH="$WORK/shared"
mkdir -p "$SH/remote"
cd "$SH"
"$ENGINE" synth --frames 500 --size 128x128 --period 9 --dose 6 --drift-linear 0.05,0.03 --seed 7 --out series.tif \
  --progress none || die "synth"
"${MPIRUN[@]}" -np 2 "$ENGINE" register series.tif --out ref --progress none || die "single-host reference run"

# OpenMPI over TCP on the private network only; keepalive so a host whose
# link goes away is noticed in seconds (Linux's default is 2 hours).
MCA='"--mca","btl","tcp,self","--mca","btl_tcp_if_include","'$NETNS_SUBNET'","--mca","oob_tcp_if_include","'$NETNS_SUBNET'",
 "--mca","oob_tcp_keepalive_time","1","--mca","oob_tcp_keepalive_intvl","1","--mca","oob_tcp_keepalive_probes","3",
 "--mca","mpi_yield_when_idle","1","--mca","plm_rsh_agent","ssh -F '$NETNS_SSH_CONFIG'"'
# A sanitizer build's options reach remote shells through setup_lines, and
# the other host's ranks through mpirun -x.
. "$TESTS_DIR/sshd_fixture.sh"
SETUP=""
if [ -n "$(sanitizer_env_line)" ]; then
  SETUP=',"'$(sanitizer_env_line)'"'
  MCA="$MCA"',"-x","ASAN_OPTIONS","-x","UBSAN_OPTIONS"'
fi
INSTALL=$(cd "$BIN/.." && pwd)
COMMON='"host":"node1","user":"root","identity_file":"'$NETNS_KEY'",
 "ssh_options":["StrictHostKeyChecking=no","UserKnownHostsFile=/dev/null","LogLevel=ERROR",
   "ControlMaster=auto","ControlPath='$NETNS_DIR'/cm-%h","ControlPersist=60"],"connect_timeout_s":5,
 "remote_install":"'$INSTALL'","remote_workdir":"'$SH/remote'","shared_input":true,"shared_output":true'
export XDG_CONFIG_HOME="$WORK/config"
mkdir -p "$XDG_CONFIG_HOME/driftscan"
S="$WORK/slurm"
cat > "$XDG_CONFIG_HOME/driftscan/profiles.json" <<JSON
{"profiles":[
 {"name":"mh-ssh","kind":"ssh",$COMMON,"setup_lines":[${SETUP#,}],"ranks":4,"mpirun_args":["--host","node1:2,node2:2",$MCA]},
 {"name":"mh-slurm","kind":"slurm",$COMMON,"setup_lines":["export SLURM_CONF=$S/slurm.conf PATH=\$PATH:/usr/sbin"$SETUP],
  "nodes":2,"tasks_per_node":2,"cpus_per_task":1,"partition":"mh","time_limit":"00:10:00","poll_interval_s":0.3,
  "mpirun_args":[$MCA]}
]}
JSON
job() {  # job NAME: a register job writing to $SH/NAME, checkpoints every 0.2 s
  cat > "$SH/$1.json" <<JSON
{"driftscan_job":1,"command":"register","input":"$SH/series.tif","output":"$SH/$1","execution":{"checkpoint_interval_s":0.2}}
JSON
}

# run_ok PROFILE NAME [--resume]: completes, drift as the single-host run's.
run_ok() {
  local t0 rc dev what="$1 $2 ${3:-}" log="$WORK/$2${3:-}"
  t0=$(now)
  launch -p "$1" "$SH/$2.json" --progress json "${@:3}" > "$log.events" 2> "$log.err"
  rc=$?
  dev=$([ -s "$SH/$2/drift.csv" ] && max_drift_deviation "$SH/ref/drift.csv" "$SH/$2/drift.csv")
  echo "  $what: rc=$rc in $(elapsed "$t0") s, max |drift - single host| = $dev px"
  check "$what: exit 0" "[ $rc -eq 0 ]"
  check "$what: 4 ranks" "grep -q '\"event\":\"start\".*\"ranks\":4' '$log.events'"
  check "$what: drift equals the single-host run within 0.01 px" "within '$dev'"
  [ "${3:-}" = --resume ] && echo "    $(grep -o 'resumed: [^"]*\|--resume: [^"]*' "$log.events")"
  [ "${3:-}" = --resume ] && check "$what: took up the checkpoints" "grep -Eq '\"resumed\": *true' '$SH/$2/report.json'"
  return 0
}

# fault PROFILE NAME WHAT: starts NAME, then once checkpoints exist kills
# node2's ranks (WHAT=kill) or takes node2's link down (WHAT=link); the
# launcher must end within 10 s with one line naming node2.
fault() {
  local prof="$1" name="$2" what="$3" P i pids="" t0 rc dt msg
  launch -p "$prof" "$SH/$name.json" --progress json > "$WORK/$name.events" 2> "$WORK/$name.err" &
  P=$!
  for i in $(seq 300); do
    pids=$(engines_on node2)
    [ -n "$pids" ] && break
    kill -0 $P 2>/dev/null || break
    sleep 0.1
  done
  check "$prof $name: ranks run on node2" "[ -n '$pids' ]"
  # Faulted in the scan, once its progress has been saved (kill: --resume
  # then has something to take up).
  for i in $(seq 600); do
    if [ "$what" = kill ]; then has_checkpoint "$SH/$name" && break
    else grep -q '"phase":"scan"' "$WORK/$name.events" && break; fi
    kill -0 $P 2>/dev/null || break
    sleep 0.02
  done
  [ "$what" = kill ] && check "$prof $name: checkpoints written before the fault" "has_checkpoint '$SH/$name'"
  t0=$(now)
  if [ "$what" = kill ]; then
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null
  else
    link_down node2
  fi
  for i in $(seq 300); do kill -0 $P 2>/dev/null || break; sleep 0.05; done
  dt=$(elapsed "$t0")
  kill -0 $P 2>/dev/null && kill -TERM $P
  wait $P; rc=$?
  msg=$(grep '^driftscan-launch:' "$WORK/$name.err")
  echo "    left in $name: $(cd "$SH/$name" && echo *)"
  echo "  $prof $name ($what node2): rc=$rc after ${dt} s: $msg"
  check "$prof $name: non-zero exit" "[ $rc -ne 0 ]"
  check "$prof $name: ended within 10 s" "awk 'BEGIN { exit !($dt <= 10) }'"
  check "$prof $name: one line naming node2" "[ \$(grep -c . <<<\"\$msg\") -eq 1 ] && grep -q node2 <<<\"\$msg\""
  # node2's ranks cut off by a link down would spin on: they are this test's.
  # shellcheck disable=SC2046
  kill -9 $(engines_on node2) 2>/dev/null
  return 0
}

# --- ssh profile: mpirun on node1, node2's ranks started by it over ssh
job ssh-full; run_ok mh-ssh ssh-full
job ssh-kill; fault mh-ssh ssh-kill kill
run_ok mh-ssh ssh-kill --resume
job ssh-link; fault mh-ssh ssh-link link
ip -n "$NETNS_PREFIX-login" link set v-node2 up

# --- Slurm profile: slurmctld on node1, a slurmd on each host
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null; then
  echo "SKIP (part): Slurm not installed; the Slurm profile is not tested"
else
  . "$TESTS_DIR/munge_fixture.sh"
  start_munge || die "munge"
  mkdir -p "$S/state" "$S/spool.node1" "$S/spool.node2"
  cat > "$S/slurm.conf" <<CONF
ClusterName=dsmh$$
SlurmctldHost=node1
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool.%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.%n.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=2
MinJobAge=300
NodeName=node[1-2] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=mh Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$S/slurm.conf"
  host_exec node1 slurmctld -f "$SLURM_CONF" 2> "$S/slurmctld.err" || die "slurmctld: $(cat "$S/slurmctld.err")"
  for n in node1 node2; do
    host_exec $n slurmd -f "$SLURM_CONF" -N $n 2> "$S/slurmd.$n.err" || die "slurmd on $n: $(cat "$S/slurmd.$n.err")"
  done
  for i in $(seq 150); do
    [ "$(host_exec node1 sinfo -h -o %T -t idle 2>/dev/null | grep -c idle)" -ge 1 ] &&
      [ "$(host_exec node1 sinfo -h -N -o '%N %T' 2>/dev/null | grep -c idle)" -eq 2 ] && break
    sleep 0.2
  done
  echo "slurm up: $(host_exec node1 sinfo -h -N -o '%N %T' | tr '\n' ' ')"
  # (No separate uninterrupted Slurm run: the resumed one is compared the same way.)
  job slurm-kill; fault mh-slurm slurm-kill kill
  check "slurm: the batch script asks for 2 nodes" "grep -q 'nodes=2' \$(ls '$SH'/remote/job-*/job.sbatch | head -1)"
  run_ok mh-slurm slurm-kill --resume
fi

[ $fail -eq 0 ] && echo PASS || {
  echo "--- logs"
  tail -n 6 "$WORK"/*.err 2>/dev/null | cut -c1-300
}
exit $fail
