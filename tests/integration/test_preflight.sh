#!/usr/bin/env bash
# Settings checked against the host before any frame is read: absurd thread
# counts, absurd synthetic sizes, excluded frames that do not exist, an
# output path that cannot be a folder, misspelt commands and a folder given
# as a job file are one-line errors naming the setting or path, exit 2, and
# leave no folder behind; on 2 ranks the same. A sane run still works.
. "$(dirname "$0")/common.sh"
cd "$WORK"
"$ENGINE" synth --frames 6 --size 64x64 --out s.tif --progress none || { echo "FAIL: synth"; exit 1; }

# refused NAME PATTERN CMD...: exit 2, one stderr line matching PATTERN, no crash.
refused() {
  local name=$1 pattern=$2; shift 2
  set +e
  "$@" > out.txt 2> err.txt; local rc=$?
  set -e
  check "$name: exit 2 (got $rc)" "[ $rc -eq 2 ]"
  check "$name: says '$pattern'" "grep -q -- \"$pattern\" err.txt"
  check "$name: one line" "[ \$(grep -c . err.txt) -eq 1 ]"
}
refused "threads" "execution.threads: 100000 threads per rank on .* cores; at most" \
  "$ENGINE" register s.tif --out t1 --threads 100000 --progress none
check "threads: no folder left" "[ ! -e t1 ]"
refused "exclude" "averaging.exclude_frames: frame 999 is not in s.tif (6 frames" \
  "$ENGINE" register s.tif --out t2 --exclude 999 --progress none
check "exclude: no folder left" "[ ! -e t2 ]"
refused "output under a file" "s.tif/x: cannot create the results folder" \
  "$ENGINE" register s.tif --out s.tif/x --progress none
refused "synth frames" "synth.frames: 1000000000000 frames of 64x64 need about .* free" \
  "$ENGINE" synth --frames 1000000000000 --size 64x64 --out big/s.tif --progress none
check "synth frames: no folder left" "[ ! -e big ]"
refused "synth size" "synth.width x synth.height: frames of 400000x400000 need about .* of memory" \
  "$ENGINE" synth --frames 2 --width 400000 --height 400000 --out huge.tif --progress none
refused "unknown command" "unknown command 'regster' (commands: .*register" "$ENGINE" regster s.tif
refused "folder as job file" "$WORK: a folder, not a job file" "$ENGINE" run "$WORK" --progress none

# Two ranks: every rank checks; the job ends with exit 2 and the reason.
set +e
"${MPIRUN[@]}" -np 2 "$ENGINE" register s.tif --out t3 --threads 100000 --progress json > events.txt 2> err.txt
rc=$?
set -e
check "2 ranks: exit 2 (got $rc)" "[ $rc -eq 2 ]"
check "2 ranks: the error event names the setting" "grep -q '\"event\":\"error\".*execution.threads' events.txt"
# Every rank refuses it; the line is said once (rank 0's), not once per rank.
check "2 ranks: the error said once on stderr" "[ \$(grep -c 'execution.threads' err.txt) -eq 1 ]"

# Within the bounds the run goes on.
"$ENGINE" register s.tif --out ok --threads 2 --exclude 5 --progress none
check "sane settings: outputs written" "[ -s ok/report.json ] && [ -s ok/drift.csv ]"
check "no write-test file left" "[ -z \"\$(ls -A ok | grep driftscan-write-test)\" ]"
exit $fail
