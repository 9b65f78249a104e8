#!/usr/bin/env bash
# One run at a time in a results folder (#31 §5; docs/protocol.md, "Results
# folders"; engine/include/driftscan/job/results_lock.hpp), on 1 and 2 ranks:
#  1. a second run into the folder of a running one (held mid-run with
#     SIGSTOP, so that it is surely still running) is refused at once: exit
#     2, one line naming the folder and the running run (its pid, host);
#     an `average` into it too; the first then completes with its results
#     intact, and leaves no lock file;
#  2. a run killed with kill -9 (rank 0 of the 2-rank run) leaves its lock
#     file, which blocks nobody: a new run into the folder succeeds;
#  3. a second `register --follow` into a folder a follow holds (and a batch
#     run) is refused; the follow ends normally.
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
LOCK=.driftscan.lock

engine() {  # ranks args...
  local np=$1
  shift
  if [ "$np" -eq 1 ]; then "$ENGINE" "$@"; else "${MPIRUN[@]}" -np "$np" "$ENGINE" "$@"; fi
}
start_engine() {  # ranks args...: in the background, $! is the engine's (or mpirun's) pid
  local np=$1
  shift
  if [ "$np" -eq 1 ]; then "$ENGINE" "$@" & else "${MPIRUN[@]}" -np "$np" "$ENGINE" "$@" & fi
}
wait_for() {  # file pattern pid: until the pattern is in the file (60 s) or the process ends
  for _ in $(seq 6000); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}
holder_pid() { sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$1/$LOCK" 2>/dev/null; }
rows() { tail -n +2 "$1/drift.csv" | wc -l; }

frames=120
"$ENGINE" synth --frames $frames --size 256x256 --period 9 --dose 6 --drift-linear 0.3,0.2 --seed 5 --out s.tif \
  --progress none || die "synth failed"
OPTS=(--threads 1 --method median --interpolation fourier)

for np in 1 2; do
  # --- 1. a second run while the first runs
  out=$WORK/busy$np
  start_engine $np register s.tif --out "$out" "${OPTS[@]}" --progress json > busy$np.events 2> busy$np.err
  P=$!
  wait_for busy$np.events '"phase":"pairs"' $P || die "np=$np: the first run did not get to its pairs: $(cat busy$np.err)"
  R0=$(holder_pid "$out")
  # Held still (rank 0, which holds the lock) while the others try: surely running.
  check "np=$np: the lock file names the first run's rank 0 (pid $R0, alive)" \
    "[ -n '$R0' ] && kill -STOP $R0 2>/dev/null"
  t0=$(now)
  engine $np register s.tif --out "$out" "${OPTS[@]}" --progress none > second$np.out 2> second$np.err
  rc=$?
  dt=$(elapsed $t0)
  echo "  np=$np: second run -> exit $rc in ${dt}s: $(cat second$np.err)"
  check "np=$np: second run refused with exit 2" "[ $rc -eq 2 ]"
  # (mpirun adds its own banner about the exit code: not the engine's lines)
  check "np=$np: one line, naming the folder and the running run" \
    "[ \$(grep -Ec '^(error|driftscan-engine):' second$np.err) -eq 1 ] &&
     grep -q 'results folder $out is in use by a register run started [0-9:]* on host $(hostname) (pid $R0); wait for it or choose another --out' second$np.err"
  engine $np average s.tif --drift s_truth.csv --out "$out" --progress none 2> average$np.err
  rc=$?
  check "np=$np: an average into it refused too (exit 2, in use): $(cat average$np.err)" \
    "[ $rc -eq 2 ] && grep -q 'is in use by a register run' average$np.err"
  kill -CONT "$R0" 2>/dev/null
  wait $P
  rc=$?
  echo "  np=$np: first run -> exit $rc, left: $(ls -A "$out" | tr '\n' ' ')"
  check "np=$np: the first run completes (exit 0) with its results" \
    "[ $rc -eq 0 ] && [ -s $out/report.json ] && [ -s $out/average.tif ] && [ \$(rows $out) -eq $frames ]"
  check "np=$np: nothing else in the folder, no lock file left" \
    "[ \"\$(ls -A $out | tr '\n' ' ')\" = 'average.tif coverage.tif drift.csv report.json sigma.tif ' ]"

  # --- 2. kill -9 midway, then a new run
  out=$WORK/killed$np
  start_engine $np register s.tif --out "$out" "${OPTS[@]}" --progress json > killed$np.events 2> killed$np.err
  P=$!
  wait_for killed$np.events '"phase":"pairs"' $P || die "np=$np: the run to kill did not get to its pairs"
  R0=$(holder_pid "$out")
  kill -9 "$R0"
  wait $P 2>/dev/null
  echo "  np=$np: killed rank 0 (pid $R0); left: $(ls -A "$out" | tr '\n' ' ')"
  check "np=$np: the killed run left its lock file" "[ -e $out/$LOCK ] && [ ! -e $out/report.json ]"
  t0=$(now)
  engine $np register s.tif --out "$out" "${OPTS[@]}" --progress none 2> after$np.err
  rc=$?
  echo "  np=$np: a new run after the kill -> exit $rc in $(elapsed $t0)s $(cat after$np.err)"
  check "np=$np: a new run after the kill succeeds, its lock gone at the end" \
    "[ $rc -eq 0 ] && [ -s $out/report.json ] && [ \$(rows $out) -eq $frames ] && [ ! -e $out/$LOCK ]"
done

# --- 3. follow: a second follow (and a batch run) into the folder refused
out=$WORK/follow
"$ENGINE" register s.tif --follow --idle-timeout 4 --out "$out" --threads 1 --progress json > f1.events 2> f1.err &
P=$!
wait_for f1.events '"event":"frame"' $P || die "the follow did not start: $(cat f1.err)"
"$ENGINE" register s.tif --follow --idle-timeout 4 --out "$out" --progress none 2> f2.err
rc=$?
echo "  second follow -> exit $rc: $(cat f2.err)"
check "follow: a second follow into the folder refused (exit 2, in use)" \
  "[ $rc -eq 2 ] && [ \$(wc -l < f2.err) -eq 1 ] && grep -q 'results folder $out is in use by a register run' f2.err"
"$ENGINE" register s.tif --out "$out" --progress none 2> f3.err
rc=$?
check "follow: a batch run into it refused (exit 2)" "[ $rc -eq 2 ] && grep -q 'is in use' f3.err"
wait $P
rc=$?
check "follow: the follow ends normally with its results, no lock file left" \
  "[ $rc -eq 0 ] && [ -s $out/report.json ] && [ \$(rows $out) -eq $frames ] && [ ! -e $out/$LOCK ]"

[ $fail -eq 0 ] && echo PASS
exit $fail
