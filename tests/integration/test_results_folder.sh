#!/usr/bin/env bash
# A results folder holds one run's outputs, committed together with
# report.json last (engine/include/driftscan/output_set.hpp), and a
# checkpoint keeps a finished scan (#18 §1, §5):
#  A. a run into the folder of an earlier run of another size (a
#     scan-distortion run: lines.csv, average_rigid.tif, …) replaces the set:
#     no stale file is left; an `average` into a register's folder is refused;
#  B. a run cancelled during the averaging (SIGTERM, 1 rank; SIGUSR1 to
#     mpirun, 2 ranks) leaves no output, keeps its checkpoint, and --resume
#     skips the pairs, the scan and the uncertainty (no such phase, the log
#     says so) with the drift.csv of an uninterrupted run, bit for bit;
#  C. the disk filling up during a run (a small tmpfs filled by another
#     process after the preflight check; needs root and mount, else skipped
#     and said so): exit 3, the error names the file and says what was kept,
#     the folder holds exactly what it held before (an earlier set of
#     another size, 1 rank; nothing, 2 ranks) and its checkpoints, no
#     temporary; after freeing space --resume finishes without the pairs,
#     the scan and the uncertainty, same drift.csv.
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
# One thread, no stealing: a deterministic scan, so the drift of a resumed
# run can be compared bit for bit with an uninterrupted one. A median of
# Fourier-shifted frames makes the averaging long enough to be interrupted.
OPTS=(--threads 1 --work-stealing off --interpolation fourier --method median)
engine() {  # ranks args...
  local np=$1
  shift
  if [ "$np" -eq 1 ]; then "$ENGINE" "$@"; else "${MPIRUN[@]}" -np "$np" "$ENGINE" "$@"; fi
}
# The same in the background: $! is the engine's (or mpirun's) pid.
start_engine() {  # ranks args...
  local np=$1
  shift
  if [ "$np" -eq 1 ]; then "$ENGINE" "$@" & else "${MPIRUN[@]}" -np "$np" "$ENGINE" "$@" & fi
}
# Non-hidden files of a folder with their checksums (checkpoints left out).
listing() { (cd "$1" && for f in *; do [ -e "$f" ] && case $f in checkpoint*) ;; *) md5sum "$f" ;; esac; done); }
hidden() { find "$1" -name '.*' | wc -l; }
phases() { grep -o '"phase":"[a-z]*"' "$1" | sort -u | sed 's/"phase"://; s/"//g' | tr '\n' ' '; }
wait_for() {  # file pattern pid: until the pattern is in the file or the process ends
  for _ in $(seq 3000); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}
same_drift() { [ "$(max_drift_deviation "$1" "$2")" = "0.000000" ] && cmp -s <(cut -d, -f1-3 "$1") <(cut -d, -f1-3 "$2"); }
# A resumed run: exit 0, no pairs or scan phase, said so, the reference's drift, no checkpoint left.
check_resumed() {  # label folder events rc reference
  local label=$1 out=$2 ev=$3 rc=$4 ref=$5
  echo "  $label resume: exit $rc, phases: $(phases "$ev"), $(grep -o '"message":"resum[^"]*"' "$ev" | head -1)"
  check "$label resume: exit 0" "[ $rc -eq 0 ]"
  check "$label resume: neither pairs, scan nor uncertainty run again" \
    "! grep -Eq '\"phase\":\"(pairs|scan|uncertainty)\"' $ev"
  check "$label resume: says so" "grep -q 'pairs and scan skipped, and the uncertainty' $ev"
  check "$label resume: the drift of the uninterrupted run, bit for bit" "same_drift $ref/drift.csv $out/drift.csv"
  check "$label resume: drift.csv (uncertainty, quality) identical to the uninterrupted run's" \
    "cmp $ref/drift.csv $out/drift.csv"
  check "$label resume: report.json says so, no checkpoint left" \
    "grep -q '\"resumed_scan_complete\": true' $out/report.json && ! ls $out/checkpoint* >/dev/null 2>&1"
}

"$ENGINE" synth --frames 40 --size 160x160 --period 9 --dose 6 --drift-linear 0.3,0.2 --seed 5 --out big.tif \
  --progress none
"$ENGINE" synth --frames 8 --size 64x64 --period 9 --dose 10 --drift-linear 1,0.5 --seed 3 --scan-dwell 2e-6 \
  --out small.tif --progress none
# --- A. an earlier run of another size, with files this run does not write
# (the 1-rank reference run goes into its folder)
"$ENGINE" register small.tif --out A --scan-distortion --scan-dwell 2e-6 --progress none
before=$(ls A | tr '\n' ' ')
engine 1 register big.tif --out A "${OPTS[@]}" --progress none
engine 2 register big.tif --out ref2 "${OPTS[@]}" --progress none
after=$(ls A | tr '\n' ' ')
echo "  A: before: $before; after: $after"
check "A: the earlier run's lines.csv, average_rigid.tif, coverage_rigid.tif, sigma_rigid.tif are gone" \
  "[ \"$after\" = 'average.tif coverage.tif drift.csv report.json sigma.tif ' ]"
check "A: coverage.tif is the new run's (its size is the 2-rank run's of the same series)" \
  "[ $(stat -c %s A/coverage.tif) -eq $(stat -c %s ref2/coverage.tif) ]"
ln -s A ref1  # the uninterrupted references on 1 and 2 ranks
"$ENGINE" average big.tif --drift A/drift.csv --out A --progress none 2> A.err
rc=$?
check "A: an average into a register's folder is refused (exit 2, one line): $(cat A.err)" \
  "[ $rc -eq 2 ] && grep -q \"holds the results of a 'register' run\" A.err && [ \"\$(ls A | tr '\n' ' ')\" = \"$after\" ]"

# --- B. cancelled during the averaging, resumed
for np in 1 2; do
  start_engine $np register big.tif --out B$np "${OPTS[@]}" --progress json > B$np.events 2> B$np.err
  P=$!
  if wait_for B$np.events '"phase":"average"' $P; then
    if [ $np -eq 1 ]; then kill -TERM $P; else kill -USR1 $P; fi
  fi
  wait $P
  rc=$?
  echo "  B$np: cancelled in phase $(grep -o '"phase":"[a-z]*"' B$np.events | tail -1): exit $rc," \
       "left: $(ls -A B$np | tr '\n' ' ')"
  check "B$np: cancelled during the averaging (exit 4)" "[ $rc -eq 4 ] && grep -q '\"phase\":\"average\"' B$np.events"
  check "B$np: no output and no temporary left, the checkpoint kept" \
    "[ -z \"\$(listing B$np)\" ] && [ $(hidden B$np) -eq 0 ] && ls B$np/checkpoint*.dsck >/dev/null 2>&1"
  engine $np register big.tif --out B$np "${OPTS[@]}" --resume --progress json > B$np.resumed 2> B$np.rerr
  check_resumed "B$np" B$np B$np.resumed $? ref$np
done

# --- C. the disk fills up during the run
mkdir C
if ! mount -t tmpfs -o size=1m tmpfs C 2>/dev/null; then
  echo "SKIP (part): cannot mount a small tmpfs here (not root?): the full-disk case was not run"
  exit $fail
fi
at_exit 'umount "$WORK/C"'
"$ENGINE" register small.tif --out C/r1 --progress none  # an earlier run of another size (1 rank only)
mkdir C/r2
for np in 1 2; do
  out=C/r$np
  old=$(listing $out)
  start_engine $np register big.tif --out $out "${OPTS[@]}" --checkpoint-interval 0.2 --progress json \
    > C$np.events 2> C$np.err
  P=$!
  # Once the preflight has passed: leave 40 KB, room for the checkpoints, not for average.tif (100 KB).
  wait_for C$np.events '"phase":"pairs"' $P &&
    fallocate -l $(($(df -B1 --output=avail C | tail -1) - 40960)) C/filler
  wait $P
  rc=$?
  msg=$(grep -o '"event":"error","message":"[^"]*"' C$np.events | head -1)
  echo "  C$np: exit $rc, $msg"
  kept="the results of the earlier run in $out are unchanged"
  [ $np -eq 2 ] && kept="nothing written to $out"
  check "C$np: the full disk is a failure (exit 3) naming the file" \
    "[ $rc -eq 3 ] && echo '$msg' | grep -q 'No space left on device' && echo '$msg' | grep -q '$out/'"
  check "C$np: the message says what was kept ($kept; the checkpoints)" \
    "echo '$msg' | grep -q '$kept; its checkpoints are kept: --resume continues'"
  check "C$np: the folder holds exactly what it held before, no temporary" \
    "[ \"\$(listing $out)\" = \"$old\" ] && [ $(hidden $out) -eq 0 ]"
  rm -f C/filler
  engine $np register big.tif --out $out "${OPTS[@]}" --resume --progress json > C$np.resumed 2> C$np.rerr
  check_resumed "C$np" $out C$np.resumed $? ref$np
done
exit $fail
