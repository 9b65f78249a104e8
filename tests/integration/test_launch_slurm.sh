#!/usr/bin/env bash
# The slurm profile end to end: a private single-node Slurm (munge +
# slurmctld + slurmd from a private slurm.conf)
# reached over a loopback sshd; a synth job submitted with sbatch, its
# progress streamed back, completion detected, results fetched; and a second
# job cancelled (scancel) from driftscan-launch; a third job stuck in its
# batch script (SIGTERM ignored), which the first cancel leaves running: the
# second sends scancel --signal=KILL --full and the launcher returns within
# its abort grace. (Slurm 22.05 refuses that signal for a job the first
# scancel has already made CANCELLED, and ends the job only after KillWait:
# the run shows what it answered.)
set -uo pipefail
. "$(dirname "$0")/common.sh"
require_programs slurmctld slurmd munged sbatch squeue scontrol scancel sshd ssh scp
[ "$(id -u)" = 0 ] || skip "the private Slurm needs root (munge, slurmd)"
export PATH="$PATH:/usr/sbin"
. "$TESTS_DIR/sshd_fixture.sh"
. "$TESTS_DIR/munge_fixture.sh"
chmod 755 "$WORK"
STUCK_PIDS=  # the stuck job's sleep and step daemon: this test's, ended by pid
stop_slurm() {
  local daemons= pid
  for pid in $STUCK_PIDS; do kill -9 "$pid" 2>/dev/null; done
  for f in "$WORK/slurm/slurmd.pid" "$WORK/slurm/slurmctld.pid"; do
    [ -f "$f" ] && daemons="$daemons $(cat "$f")"
  done
  for pid in $daemons; do kill "$pid" 2>/dev/null; done
  sleep 0.5
  # A slurmd still ending a job step outlives SIGTERM for a while: not left behind.
  for pid in $daemons; do kill -0 "$pid" 2>/dev/null && { sleep 2; kill -9 "$pid" 2>/dev/null; }; done
}
at_exit stop_sshd
at_exit stop_slurm   # runs first

start_munge || exit 1

# --- slurmctld + slurmd from a private configuration
S="$WORK/slurm"; mkdir -p "$S/state" "$S/spool"
HOST=$(hostname -s)
cat > "$S/slurm.conf" <<CONF
ClusterName=dstest$$
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=60
MinJobAge=300
NodeName=$HOST CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=dstest Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$S/slurm.conf"
slurmctld -f "$SLURM_CONF" 2>"$S/slurmctld.err" || { echo "FAIL: slurmctld: $(cat "$S/slurmctld.err")"; exit 1; }
slurmd -f "$SLURM_CONF" 2>"$S/slurmd.err" || { echo "FAIL: slurmd: $(cat "$S/slurmd.err")"; exit 1; }
for i in $(seq 100); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 0.2; done
sinfo -h -o %T | grep -q idle || { echo "FAIL: node never idle"; tail -5 "$S"/*.log; exit 1; }
echo "slurm up: $(sinfo -h -o '%P %D %T')"

start_sshd "$WORK" || exit 1
export XDG_CONFIG_HOME="$WORK/config"
mkdir -p "$XDG_CONFIG_HOME/driftscan" "$WORK/remote"
INSTALL=$(cd "$BIN/.." && pwd)
slurm_profile() {  # NAME [one more setup line]
  ssh_profile_json "$1" slurm ",\"remote_install\":\"$INSTALL\",\"remote_workdir\":\"$WORK/remote\",
   \"setup_lines\":[\"export SLURM_CONF=$SLURM_CONF PATH=\$PATH:/usr/sbin\"$( [ -n "$(sanitizer_env_line)" ] && printf ',\"%s\"' "$(sanitizer_env_line)")${2:+,\"$2\"}],
   \"nodes\":1,\"tasks_per_node\":2,\"cpus_per_task\":1,\"partition\":\"dstest\",\"time_limit\":\"00:10:00\",
   \"poll_interval_s\":0.5,\"mpirun_args\":[\"--oversubscribe\",\"--mca\",\"mpi_yield_when_idle\",\"1\"]"
}
# "stuck": inside a Slurm job only (the setup lines also run before sbatch,
# squeue and scancel), the batch script ignores SIGTERM and hangs before the
# engine starts, as a setup step hung on a file system would. KillWait=60:
# Slurm's own SIGKILL after the first cancel comes later than the launcher
# may wait after the second.
STUCK_SLEEP=6$$
STUCK_LINE="case \${SLURM_JOB_ID:-} in ?*) trap '' TERM; touch $WORK/stuck.flag; sleep $STUCK_SLEEP;; esac"
{
  echo '{"profiles":['
  slurm_profile cluster
  echo ','
  slurm_profile stuck "$STUCK_LINE"
  echo ']}'
} > "$XDG_CONFIG_HOME/driftscan/profiles.json"

cat > "$WORK/synth.json" <<JSON
{"driftscan_job":1,"command":"synth","output":"$WORK/out","synth":{"frames":300,"width":128,"height":128}}
JSON
timeout 180 "$LAUNCH" -p cluster "$WORK/synth.json" --progress json > "$WORK/run.events" 2> "$WORK/run.err"
rc=$?
check "slurm run: exit 0" "[ $rc -eq 0 ]"
check "slurm run: sbatch logged" "grep -q 'sbatch --parsable' '$WORK/run.events'"
check "slurm run: job id reported" "grep -q '\"slurm_job\"' '$WORK/run.events'"
check "slurm run: start event from 2 ranks" "grep -q '\"event\":\"start\".*\"ranks\":2' '$WORK/run.events'"
check "slurm run: progress streamed" "[ \$(grep -c '\"event\":\"progress\"' '$WORK/run.events') -ge 2 ]"
check "slurm run: completion detected" "grep -q 'ended: COMPLETED' '$WORK/run.events'"
check "slurm run: results fetched" "[ -s '$WORK/out/series.tif' ] && [ \$(wc -l < '$WORK/out/series_truth.csv') -eq 301 ]"
check "slurm run: batch script generated with the profile's resources" "grep -q 'ntasks-per-node=2' \$(ls '$WORK'/remote/job-*/job.sbatch | head -1)"

# --- cancel: scancel from driftscan-launch
cat > "$WORK/long.json" <<JSON
{"driftscan_job":1,"command":"synth","output":"$WORK/out-long","synth":{"frames":20000,"width":256,"height":256}}
JSON
timeout 180 "$LAUNCH" -p cluster "$WORK/long.json" --progress json > "$WORK/cancel.events" 2> "$WORK/cancel.err" &
P=$!
for i in $(seq 300); do grep -q '"event":"progress"' "$WORK/cancel.events" 2>/dev/null && break; sleep 0.2; done
JOB=$(grep -o '"slurm_job":"[0-9]*"' "$WORK/cancel.events" | grep -o '[0-9]*' | head -1)
kill -TERM $P; t0=$(date +%s); wait $P; rc=$?; dt=$(( $(date +%s) - t0 ))
echo "  cancel of slurm job $JOB -> rc=$rc in ${dt}s"
check "slurm cancel: exit 4" "[ $rc -eq 4 ]"
# Followed here, not on the short run: that job can end (2 s) before the
# follower's first squeue, and then Slurm has no state left to report.
check "slurm cancel: queue state followed" "grep -Eq 'slurm job [0-9]+ (PENDING|RUNNING)' '$WORK/cancel.events'"
check "slurm cancel: scancel logged" "grep -q '\$ ssh .*scancel' '$WORK/cancel.events'"
check "slurm cancel: job cancelled in Slurm" "scontrol show job $JOB 2>/dev/null | grep -q 'JobState=CANCELLED' || ! squeue -h -j $JOB -t PD,R,CG 2>/dev/null | grep -q ."
check "slurm cancel: within 30 s" "[ $dt -le 30 ]"
check "slurm cancel: nothing fetched" "[ ! -e '$WORK/out-long/series.tif' ]"

# --- a second cancel: scancel --signal=KILL --full kills a job stuck in its batch script
timeout 180 "$LAUNCH" -p stuck "$WORK/long.json" -o "$WORK/out-stuck" --progress json > "$WORK/stuck.events" 2> "$WORK/stuck.err" &
P=$!
for i in $(seq 300); do [ -e "$WORK/stuck.flag" ] && break; sleep 0.2; done
JOB=$(grep -o '"slurm_job":"[0-9]*"' "$WORK/stuck.events" | grep -o '[0-9]*' | head -1)
check "stuck job: its batch script is running" "[ -e '$WORK/stuck.flag' ] && [ -n '$JOB' ]"
SLEEP_PID=$(pgrep -f "^sleep $STUCK_SLEEP\$" | head -1)
[ -n "$SLEEP_PID" ] && STUCK_PIDS="$SLEEP_PID $(ps -o ppid= -p "$(ps -o ppid= -p "$SLEEP_PID")")"
# Signalled directly: `timeout` ignores (and does not pass on) a second SIGTERM.
L=$(pgrep -P $P | head -1)  # the launcher, timeout's only child
kill -TERM $L
sleep 5
check "stuck job: the first cancel sent scancel" "grep -q 'cancelling: scancel $JOB' '$WORK/stuck.events'"
check "stuck job: still in Slurm 5 s after the first cancel" "squeue -h -j $JOB 2>/dev/null | grep -q ."
check "stuck job: its batch script still runs" "pgrep -f 'sleep $STUCK_SLEEP' >/dev/null"
check "stuck job: the launcher still follows it" "kill -0 $L 2>/dev/null"
kill -TERM $L; t0=$(date +%s); wait $P; rc=$?; dt=$(( $(date +%s) - t0 ))
echo "  second cancel of slurm job $JOB -> rc=$rc in ${dt}s"
check "second cancel: scancel --signal=KILL --full logged" "grep -q 'cancelling: scancel --signal=KILL --full $JOB' '$WORK/stuck.events'"
check "second cancel: exit 4" "[ $rc -eq 4 ]"
check "second cancel: the launcher returns within 20 s (abort grace 10 s; KillWait is 60 s)" "[ $dt -le 20 ]"
check "second cancel: the launcher says it stopped following the job" \
  "grep -q 'after a further cancel; no longer following it' '$WORK/stuck.events'"
echo "  Slurm's answer to the KILL: $(grep -o 'scancel --signal=KILL --full [0-9]* failed[^\"]*' "$WORK/stuck.events" || echo accepted)"
echo "  the job then: $(squeue -h -j $JOB -o %T 2>/dev/null || true), its batch script's sleep: $(pgrep -f "^sleep $STUCK_SLEEP\$" | wc -l) process(es)"

[ $fail -eq 0 ] && echo PASS || { echo "--- logs"; tail -n 8 "$WORK"/*.err "$WORK"/*.events "$S"/slurmctld.log 2>/dev/null | cut -c1-400; }
exit $fail
