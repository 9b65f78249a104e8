#!/usr/bin/env bash
# driftscan-engine as a cluster program: job files and flags (--print-job,
# overrides, unknown fields), exit codes, cancellation (SIGTERM mid-run ->
# exit 4, `cancelled` event, no complete-looking output), a rank killed with
# -9 (non-zero within 10 s, message naming the rank and host), and
# checkpoints (kill mid-run, --resume, same drift.csv as an uninterrupted run).
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"

# --- job files and flags
"$ENGINE" --version | grep -q '^driftscan-engine [0-9]'; check "--version" "[ $? -eq 0 ]"
"$ENGINE" register --help > help.txt; rc=$?
check "register --help exits 0 and lists job fields" "[ $rc -eq 0 ] && grep -q 'registration.max_shift' help.txt"
"$ENGINE" register --no-such-flag >/dev/null 2>&1; check "unknown flag -> exit 2" "[ $? -eq 2 ]"
cat > job.json <<JSON
{"driftscan_job":1,"command":"register","input":"in.tif","output":"res","registration":{"max_shift":5}}
JSON
"$ENGINE" run job.json --max-shift 7 --model rigid --print-job > eff.json; rc=$?
check "run --print-job: exit 0" "[ $rc -eq 0 ]"
check "run --print-job: flag overrides file" "python3 -c 'import json,sys; j=json.load(open(\"eff.json\")); sys.exit(0 if j[\"registration\"][\"max_shift\"]==7 and j[\"registration\"][\"model\"]==\"rigid\" and j[\"input\"]==\"$PWD/in.tif\" else 1)'"
"$ENGINE" run eff.json --print-job > eff2.json
check "printed job runs back unchanged" "cmp -s eff.json eff2.json"
# Its paths are absolute: printed here, it means the same run from another folder.
(cd / && "$ENGINE" run "$OLDPWD/eff.json" --print-job > "$OLDPWD/eff3.json")
check "printed job means the same from another folder" "cmp -s eff.json eff3.json"
sed 's/"max_shift":5/"max_shfit":5/' job.json > typo.json
"$ENGINE" run typo.json 2> typo.err; rc=$?
check "unknown field -> exit 2 naming field and file" "[ $rc -eq 2 ] && grep -q 'typo.json' typo.err && grep -q 'registration.max_shfit' typo.err"
"$ENGINE" register missing.tif -o res --progress json > miss.events 2>/dev/null; rc=$?
check "missing input -> exit 2 with an error event naming it" "[ $rc -eq 2 ] && grep -q '\"event\":\"error\".*missing.tif' miss.events"

# --- cancellation: SIGTERM to the engine mid-run
"$ENGINE" synth --frames 20000 --width 256 --height 256 -o cancel1 --progress json > c1.events 2> c1.err &
P=$!
for i in $(seq 100); do grep -q '"done":[1-9]' c1.events 2>/dev/null && break; sleep 0.1; done
kill -TERM $P; t0=$(now); wait $P; rc=$?; dt=$(elapsed $t0)
echo "  SIGTERM (1 rank) -> rc=$rc in ${dt}s"
check "SIGTERM: exit 4" "[ $rc -eq 4 ]"
check "SIGTERM: stopped within 2 s" "python3 -c 'import sys; sys.exit(0 if $dt <= 2.0 else 1)'"
check "SIGTERM: cancelled event" "tail -1 c1.events | grep -q '\"event\":\"cancelled\"'"
check "SIGTERM: no complete-looking output" "[ ! -e cancel1/series.tif ] && [ -z \"\$(ls -A cancel1 2>/dev/null)\" ]"

# SIGTERM to one rank of two: the relay stops the other rank too.
"${MPIRUN[@]}" -np 2 "$ENGINE" synth --frames 20000 --width 256 --height 256 -o cancel2 --progress json > c2.events 2> c2.err &
P=$!
for i in $(seq 100); do grep -q '"done":[1-9]' c2.events 2>/dev/null && break; sleep 0.1; done
R1=$(pgrep -P $P | tail -1)
kill -TERM "$R1"; t0=$(now); wait $P; rc=$?; dt=$(elapsed $t0)
echo "  SIGTERM to rank 1 of 2 -> rc=$rc in ${dt}s"
check "SIGTERM one rank: exit 4" "[ $rc -eq 4 ]"
check "SIGTERM one rank: job over within 3 s" "python3 -c 'import sys; sys.exit(0 if $dt <= 3.0 else 1)'"
check "SIGTERM one rank: cancelled event" "grep -q '\"event\":\"cancelled\"' c2.events"
check "SIGTERM one rank: no complete-looking output" "[ ! -e cancel2/series.tif ]"

# --- a rank dies (kill -9): non-zero within 10 s, naming rank and host
"${MPIRUN[@]}" -np 2 "$ENGINE" synth --frames 20000 --width 256 --height 256 -o dead --progress json > d.events 2> d.err &
P=$!
for i in $(seq 100); do grep -q '"done":[1-9]' d.events 2>/dev/null && break; sleep 0.1; done
R1=$(pgrep -P $P | tail -1)
kill -9 "$R1"; t0=$(now); wait $P; rc=$?; dt=$(elapsed $t0)
echo "  kill -9 rank 1 -> rc=$rc in ${dt}s: $(grep -m1 'rank 1' d.err)"
check "rank death: non-zero exit" "[ $rc -ne 0 ]"
check "rank death: within 10 s" "python3 -c 'import sys; sys.exit(0 if $dt <= 10 else 1)'"
check "rank death: message names rank 1 and the host" "grep -q 'rank 1.*on node $(hostname -s)' d.err"
check "rank death: no complete-looking output" "[ ! -e dead/series.tif ]"

# --- checkpoints: interrupt a registration, resume, compare with an uninterrupted run
"$ENGINE" --progress none synth --frames 1000 --width 64 --height 64 -o ser > /dev/null 2>&1
"$ENGINE" --progress none register ser/series.tif -o full > /dev/null 2>&1; rc=$?
check "uninterrupted register: exit 0" "[ $rc -eq 0 ] && [ -s full/drift.csv ]"
"$ENGINE" register ser/series.tif -o part --checkpoint-interval 0.05 --progress json > p.events 2> p.err &
P=$!
for i in $(seq 200); do [ -e part/checkpoint.dsck ] && grep -q '"phase":"scan"' p.events && break; sleep 0.05; done
kill -TERM $P; wait $P; rc=$?
check "interrupted register: exit 4 with a checkpoint left" "[ $rc -eq 4 ] && [ -s part/checkpoint.dsck ] && [ ! -e part/drift.csv ]"
"$ENGINE" register ser/series.tif -o part --resume --progress json > r.events 2> r.err; rc=$?
check "resumed register: exit 0" "[ $rc -eq 0 ]"
check "resumed register: said it resumed" "grep -q 'resuming from' r.events"
check "resumed register: drift.csv identical to the uninterrupted run" "cmp -s full/drift.csv part/drift.csv"
check "resumed register: average.tif identical" "cmp -s full/average.tif part/average.tif"
check "resumed register: checkpoint removed" "[ ! -e part/checkpoint.dsck ]"

[ $fail -eq 0 ] && echo PASS
exit $fail
