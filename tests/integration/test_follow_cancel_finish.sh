#!/usr/bin/env bash
# A follow's Stop pressed twice, through the launcher (issue #15): the first
# cancel ends the follow and the engine finishes the results; the second,
# while that finish runs, cancels it — on the local profile (mpirun) and,
# when sshd is installed, the ssh profile. driftscan-launch passes each
# SIGTERM it gets on as one cancel (the app's Stop does the same through
# the launcher library). Expected: exit 4 and the `cancelled` event, the
# engine's line saying what was kept, no report.json, coverage.tif or staged
# temporary left, drift.csv with a whole row per frame taken. A single Stop
# still finishes the results (exit 0, report.json), over the frames taken
# although the file holds more.
set -uo pipefail
. "$(dirname "$0")/common.sh"
require_programs mpirun
WRITER="$BIN/follow_writer"
[ -x "$WRITER" ] || skip "follow_writer not built"

# A finished file of 300 frames: the follow takes them as fast as it can, and
# the finish (a median over the frames taken, in 1 MB: many passes) lasts seconds.
"$ENGINE" synth --frames 300 --size 192x192 --period 9 --dose 6 --seed 5 --out "$WORK/s.tif" --progress none \
  >/dev/null || die "synth failed"
"$WRITER" "$WORK/s.tif" "$WORK/live.tif" --frames 300 --rate 0 >/dev/null || die "follow_writer failed"

export XDG_CONFIG_HOME="$WORK/config"
mkdir -p "$XDG_CONFIG_HOME/driftscan"
profiles='{"name":"one","kind":"local","ranks":1,"threads":1}'
if command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ]; then
  . "$TESTS_DIR/sshd_fixture.sh"
  at_exit stop_sshd
  if start_sshd "$WORK"; then
    mkdir -p "$WORK/remote"
    INSTALL=$(cd "$BIN/.." && pwd)
    profiles="$profiles,$(ssh_profile_json remote ssh ",\"remote_install\":\"$INSTALL\",\"remote_workdir\":\"$WORK/remote\",\"shared_input\":true,\"shared_output\":true,\"ranks\":1")"
  fi
fi
echo "{\"profiles\":[$profiles]}" >"$XDG_CONFIG_HOME/driftscan/profiles.json"

job() {
  cat >"$WORK/$1.json" <<JSON
{"driftscan_job":1,"command":"register","input":"$WORK/live.tif","output":"$WORK/$1",
 "averaging":{"method":"median","median_memory_mb":1},"follow":{"enabled":true,"idle_timeout_s":60}}
JSON
}
rows() { [ -f "$1" ] && tail -n +2 "$1" | wc -l || echo 0; }
# Waits (up to 60 s) until the events file $1 reports 150 frames registered:
# the finish (a median over them in 1 MB) then lasts over a second, long
# enough for the second Stop to find it running.
wait_frames() {
  for _ in $(seq 1200); do
    [ "$(grep -c '"event":"frame"' "$1" 2>/dev/null)" -ge 150 ] && return 0
    sleep 0.05
  done
  return 1
}
# Waits (up to 60 s) until the events file $1 has a line matching $2.
wait_event() {
  for _ in $(seq 1200); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# stop_twice NAME PROFILE: Stop once 150 rows are in, again once the engine says it is finishing.
stop_twice() {
  local name=$1 out="$WORK/$1"
  job "$name"
  "$LAUNCH" -p "$2" "$WORK/$name.json" --progress json >"$out.events" 2>"$out.err" &
  local p=$!
  wait_frames "$out.events"
  kill -TERM $p
  if ! wait_event "$out.events" 'finishing the results'; then
    kill -9 $p
    check "$name: the first Stop ends the follow" false
    return
  fi
  local t0
  t0=$(now)
  kill -TERM $p
  wait $p
  local rc=$? dt
  dt=$(elapsed "$t0")
  local taken
  taken=$(grep -o 'following stopped after [0-9]* frames' "$out.events" | grep -o '[0-9]*')
  echo "  $name: Stop after ${taken:-?} frames, Stop again while finishing -> rc=$rc in ${dt}s"
  check "$name: exit 4" "[ $rc -eq 4 ]"
  check "$name: stopped within 10 s of the second Stop" "awk 'BEGIN{exit !($dt <= 10)}'"
  check "$name: the launcher passed the second cancel on" "grep -q 'cancelling again' '$out.events'"
  check "$name: cancelled event" "grep -q '\"event\":\"cancelled\"' '$out.events'"
  check "$name: no result event" "! grep -q '\"event\":\"result\"' '$out.events'"
  check "$name: the engine says what it kept" "grep -q 'the finish was cancelled: no report.json' '$out.events'"
  check "$name: no report.json, no coverage.tif" "[ ! -e '$out/report.json' ] && [ ! -e '$out/coverage.tif' ]"
  check "$name: no staged temporary left" "[ -z \"\$(find '$out' -name '.*.tmp-*')\" ]"
  check "$name: drift.csv has a whole row per frame taken" \
    "[ -n '$taken' ] && [ \"\$(rows '$out/drift.csv')\" -eq '$taken' ] && [ \"\$(tail -c 1 '$out/drift.csv' | od -An -c | tr -d ' ')\" = '\\n' ]"
  if [ -e "$out/average.tif" ]; then
    check "$name: the running average.tif is a whole TIFF" "'$ENGINE' info '$out/average.tif' >/dev/null 2>&1"
  fi
}

stop_twice local-twice one
if grep -q '"remote"' "$XDG_CONFIG_HOME/driftscan/profiles.json"; then
  stop_twice ssh-twice remote
else
  echo "  (sshd not available: the ssh profile is not tried)"
fi

# One Stop: the finish runs to its end.
job local-once
"$LAUNCH" -p one "$WORK/local-once.json" --progress json >"$WORK/local-once.events" 2>"$WORK/local-once.err" &
P=$!
wait_frames "$WORK/local-once.events"
kill -TERM $P
wait $P
rc=$?
echo "  local-once: one Stop -> rc=$rc"
check "one Stop: exit 0 with report.json" "[ $rc -eq 0 ] && [ -s '$WORK/local-once/report.json' ]"
check "one Stop: stopped_by cancel" "grep -q '\"stopped_by\": \"cancel\"' '$WORK/local-once/report.json'"
taken=$(grep -o 'following stopped after [0-9]* frames' "$WORK/local-once.events" | grep -o '[0-9]*')
echo "  local-once: $taken of 300 frames taken"
check "one Stop: the results are those of the frames taken" \
  "[ -n '$taken' ] && [ \"\$(rows '$WORK/local-once/drift.csv')\" -eq '$taken' ] && grep -q \"\\\"frames\\\": $taken\" '$WORK/local-once/report.json'"

exit $fail
