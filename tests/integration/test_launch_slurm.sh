#!/usr/bin/env bash
# The slurm profile end to end: a private single-node Slurm (munge +
# slurmctld + slurmd from a private slurm.conf, ../shared/notes/platform.md)
# reached over a loopback sshd; a synth job submitted with sbatch, its
# progress streamed back, completion detected, results fetched; and a second
# job cancelled (scancel) from driftscan-launch.
set -uo pipefail
. "$(dirname "$0")/common.sh"
require_programs slurmctld slurmd munged sbatch squeue scontrol scancel sshd ssh scp
[ "$(id -u)" = 0 ] || skip "the private Slurm needs root (munge, slurmd)"
export PATH="$PATH:/usr/sbin"
. "$TESTS_DIR/sshd_fixture.sh"
. "$TESTS_DIR/munge_fixture.sh"
chmod 755 "$WORK"
stop_slurm() {
  for f in "$WORK/slurm/slurmd.pid" "$WORK/slurm/slurmctld.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  sleep 0.5
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
KillWait=5
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
{
  echo '{"profiles":['
  ssh_profile_json cluster slurm ",\"remote_install\":\"$INSTALL\",\"remote_workdir\":\"$WORK/remote\",
   \"setup_lines\":[\"export SLURM_CONF=$SLURM_CONF PATH=\$PATH:/usr/sbin\"$( [ -n "$(sanitizer_env_line)" ] && printf ',\"%s\"' "$(sanitizer_env_line)")],
   \"nodes\":1,\"tasks_per_node\":2,\"cpus_per_task\":1,\"partition\":\"dstest\",\"time_limit\":\"00:10:00\",
   \"poll_interval_s\":0.5,\"mpirun_args\":[\"--oversubscribe\",\"--mca\",\"mpi_yield_when_idle\",\"1\"]"
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

[ $fail -eq 0 ] && echo PASS || { echo "--- logs"; tail -n 8 "$WORK"/*.err "$WORK"/*.events "$S"/slurmctld.log 2>/dev/null | cut -c1-400; }
exit $fail
