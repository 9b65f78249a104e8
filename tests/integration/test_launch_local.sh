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

# Starts profile $1's long job (events and stderr in $WORK/$2.*), kills its
# newest engine rank with -9 once it reports progress, and waits: sets rc, dt
# (seconds from the kill to the launcher's end), msg and LAUNCHER_CHILD.
kill_a_rank() {
  rm -rf "$WORK/out-long"
  "$LAUNCH" -p "$1" "$WORK/long.json" --progress json > "$WORK/$2.events" 2> "$WORK/$2.err" &
  local p=$! victim
  for i in $(seq 100); do grep -q '"done":[1-9]' "$WORK/$2.events" 2>/dev/null && break; sleep 0.1; done
  LAUNCHER_CHILD=$(pgrep -P $p | head -1)
  # The launcher's own ranks only (other tests may run engines too).
  victim=$(pstree -p "$LAUNCHER_CHILD" | grep -o 'driftscan-engin([0-9]*)' | grep -o '[0-9]*' | sort -n | tail -1)
  kill -9 "$victim"; t0=$(now); wait $p; rc=$?; dt=$(elapsed $t0)
  msg=$(grep -m1 '^driftscan-launch:' "$WORK/$2.err")
}

# --- a rank dies
kill_a_rank two dead
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
kill_a_rank stuck stuck
echo "  kill -9 one rank, mpirun stuck -> rc=$rc in ${dt}s: $msg"
check "stuck mpirun: exit 3" "[ $rc -eq 3 ]"
check "stuck mpirun: within 10 s" "python3 -c 'import sys; sys.exit(0 if $dt <= 10 else 1)'"
check "stuck mpirun: message names the rank and that mpirun was stopped" "grep -Eq 'rank [0-9]+ .*mpirun did not end within' <<<\"\$msg\""
check "stuck mpirun: its process group is gone" "! kill -0 $LAUNCHER_CHILD 2>/dev/null"
check "stuck mpirun: no complete-looking output" "[ ! -e '$WORK/out-long/series.tif' ]"

[ $fail -eq 0 ] && echo PASS || { echo "--- logs:"; tail -n 8 "$WORK"/*.err "$WORK"/*.events 2>/dev/null | cut -c1-400; }
exit $fail
