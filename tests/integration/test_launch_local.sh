#!/usr/bin/env bash
# driftscan-launch with the local profile: a synth job with 2 and with 3
# ranks end to end (events, exact commands logged, results), cancel (SIGTERM
# to driftscan-launch -> exit 4, no complete-looking output) and a rank
# killed with -9 (non-zero within 10 s, message naming rank and host), also
# when mpirun reports the death but does not end (it is stopped).
set -uo pipefail
. "$(dirname "$0")/common.sh"
require_programs mpirun
export XDG_CONFIG_HOME="$WORK/config"
mkdir -p "$XDG_CONFIG_HOME/driftscan"
cat > "$XDG_CONFIG_HOME/driftscan/profiles.json" <<JSON
{"profiles":[
 {"name":"two","kind":"local","ranks":2,"threads":1,"mpirun_args":["--mca","mpi_yield_when_idle","1"]},
 {"name":"three","kind":"local","ranks":3,"threads":1,"mpirun_args":["--oversubscribe","--mca","mpi_yield_when_idle","1"]},
 {"name":"stuck","kind":"local","ranks":2,"threads":1,"mpirun":"$WORK/stuck-mpirun","mpirun_args":["--mca","mpi_yield_when_idle","1"]}
]}
JSON

for prof in two three; do
  n=$([ $prof = two ] && echo 2 || echo 3)
  cat > "$WORK/$prof.json" <<JSON
{"driftscan_job":1,"command":"synth","output":"$WORK/out-$prof","synth":{"frames":16,"width":64,"height":64,"seed":$n}}
JSON
  "$LAUNCH" -p $prof "$WORK/$prof.json" --progress json > "$WORK/$prof.events" 2> "$WORK/$prof.err"
  rc=$?
  check "$n ranks: exit 0" "[ $rc -eq 0 ]"
  check "$n ranks: engine reports $n ranks" "grep -q '\"event\":\"start\".*\"ranks\":$n' '$WORK/$prof.events'"
  check "$n ranks: mpirun command logged" "grep -q '\"message\":\"\$ mpirun -np $n ' '$WORK/$prof.events'"
  check "$n ranks: progress and result events" "grep -q '\"phase\":\"synthesize\"' '$WORK/$prof.events' && grep -q '\"event\":\"result\"' '$WORK/$prof.events'"
  check "$n ranks: series written" "[ -s '$WORK/out-$prof/series.tif' ] && [ \$(wc -l < '$WORK/out-$prof/series_truth.csv') -eq 17 ]"
done
"$LAUNCH" -p nosuch "$WORK/two.json" 2> "$WORK/nosuch.err"; rc=$?
check "unknown profile: exit 2 listing the known ones" "[ $rc -eq 2 ] && grep -q 'three' '$WORK/nosuch.err'"

cat > "$WORK/long.json" <<JSON
{"driftscan_job":1,"command":"synth","output":"$WORK/out-long","synth":{"frames":20000,"width":256,"height":256}}
JSON
# --- cancel
"$LAUNCH" -p two "$WORK/long.json" --progress json > "$WORK/cancel.events" 2> "$WORK/cancel.err" &
P=$!
for i in $(seq 100); do grep -q '"done":[1-9]' "$WORK/cancel.events" 2>/dev/null && break; sleep 0.1; done
kill -TERM $P; t0=$(now); wait $P; rc=$?; dt=$(elapsed $t0)
echo "  cancel -> rc=$rc in ${dt}s"
check "cancel: exit 4" "[ $rc -eq 4 ]"
check "cancel: within 3 s" "python3 -c 'import sys; sys.exit(0 if $dt <= 3 else 1)'"
check "cancel: cancelled event" "grep -q '\"event\":\"cancelled\"' '$WORK/cancel.events'"
check "cancel: no complete-looking output" "[ ! -e '$WORK/out-long/series.tif' ]"

# --- a rank dies
rm -rf "$WORK/out-long"
"$LAUNCH" -p two "$WORK/long.json" --progress json > "$WORK/dead.events" 2> "$WORK/dead.err" &
P=$!
for i in $(seq 100); do grep -q '"done":[1-9]' "$WORK/dead.events" 2>/dev/null && break; sleep 0.1; done
# The launcher's own ranks: launcher -> mpirun -> driftscan-engine.
VICTIM=$(for m in $(pgrep -P $P); do pgrep -P "$m"; done | sort -n | tail -1)
kill -9 "$VICTIM"; t0=$(now); wait $P; rc=$?; dt=$(elapsed $t0)
msg=$(grep -m1 '^driftscan-launch:' "$WORK/dead.err")
echo "  kill -9 one rank -> rc=$rc in ${dt}s: $msg"
check "rank death: non-zero exit" "[ $rc -ne 0 ] && [ $rc -ne 4 ]"
check "rank death: within 10 s" "python3 -c 'import sys; sys.exit(0 if $dt <= 10 else 1)'"
check "rank death: message names the rank and host" "grep -Eq 'rank [0-9]+ .*on host $(hostname -s)' <<<\"\$msg\""
check "rank death: error event" "grep -q '\"event\":\"error\".*rank' '$WORK/dead.events'"
check "rank death: no complete-looking output" "[ ! -e '$WORK/out-long/series.tif' ]"

# --- a rank dies and mpirun does not end (as when a rank fails inside
# MPI_Init under PMIx and mpirun waits on it): the launcher stops it.
cat > "$WORK/stuck-mpirun" <<'SH'
#!/usr/bin/env bash
mpirun "$@"
exec sleep 600
SH
chmod +x "$WORK/stuck-mpirun"
rm -rf "$WORK/out-long"
"$LAUNCH" -p stuck "$WORK/long.json" --progress json > "$WORK/stuck.events" 2> "$WORK/stuck.err" &
P=$!
for i in $(seq 100); do grep -q '"done":[1-9]' "$WORK/stuck.events" 2>/dev/null && break; sleep 0.1; done
WRAPPER=$(pgrep -P $P | head -1)
# launcher -> wrapper -> mpirun -> driftscan-engine
VICTIM=$(for m in $(pgrep -P "$WRAPPER"); do pgrep -P "$m"; done | sort -n | tail -1)
kill -9 "$VICTIM"; t0=$(now); wait $P; rc=$?; dt=$(elapsed $t0)
msg=$(grep -m1 '^driftscan-launch:' "$WORK/stuck.err")
echo "  kill -9 one rank, mpirun stuck -> rc=$rc in ${dt}s: $msg"
check "stuck mpirun: exit 3" "[ $rc -eq 3 ]"
check "stuck mpirun: within 10 s" "python3 -c 'import sys; sys.exit(0 if $dt <= 10 else 1)'"
check "stuck mpirun: message names the rank and that mpirun was stopped" "grep -Eq 'rank [0-9]+ .*mpirun did not end within' <<<\"\$msg\""
check "stuck mpirun: its process group is gone" "! kill -0 $WRAPPER 2>/dev/null"
check "stuck mpirun: no complete-looking output" "[ ! -e '$WORK/out-long/series.tif' ]"

[ $fail -eq 0 ] && echo PASS || { echo "--- logs:"; tail -n 8 "$WORK"/*.err "$WORK"/*.events 2>/dev/null | cut -c1-400; }
exit $fail
