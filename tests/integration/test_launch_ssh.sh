#!/usr/bin/env bash
# The ssh profile end to end against a real sshd on 127.0.0.1 (own port,
# throw-away keys): preflight errors (unreachable, auth failure, missing
# binary, version mismatch) each as one clear message within a bounded time;
# a synth job run remotely; a register job whose input is staged with scp and
# whose results are fetched back; cancel of a remote run.
set -uo pipefail
. "$(dirname "$0")/common.sh"
require_programs sshd ssh scp ssh-keygen python3
. "$TESTS_DIR/sshd_fixture.sh"
at_exit stop_sshd
start_sshd "$WORK" || exit 1
export XDG_CONFIG_HOME="$WORK/config"
mkdir -p "$XDG_CONFIG_HOME/driftscan" "$WORK/remote" "$WORK/fake/bin"
INSTALL=$(cd "$BIN/.." && pwd)   # remote_install: <install>/bin/driftscan-engine
# A different DriftScan install, for the version check.
printf '#!/bin/sh\necho "driftscan-engine 9.9.9"\n' > "$WORK/fake/bin/driftscan-engine"
chmod +x "$WORK/fake/bin/driftscan-engine"
CLOSED_PORT=$(free_port)
ssh-keygen -q -t ed25519 -N '' -f "$WORK/wrong_key"
{
  echo '{"profiles":['
  ssh_profile_json remote ssh ",\"remote_install\":\"$INSTALL\",\"remote_workdir\":\"$WORK/remote\",\"ranks\":2"; echo ','
  ssh_profile_json missing ssh ",\"remote_install\":\"$WORK/nowhere\",\"remote_workdir\":\"$WORK/remote\""; echo ','
  ssh_profile_json oldver ssh ",\"remote_install\":\"$WORK/fake\",\"remote_workdir\":\"$WORK/remote\""; echo ','
  ssh_profile_json badkey ssh ",\"remote_install\":\"$INSTALL\"" | sed "s#$SSH_KEY#$WORK/wrong_key#"; echo ','
  ssh_profile_json closed ssh ",\"remote_install\":\"$INSTALL\"" | sed "s#\"port\":$SSHD_PORT#\"port\":$CLOSED_PORT#"
  echo ']}'
} > "$XDG_CONFIG_HOME/driftscan/profiles.json"

cat > "$WORK/synth.json" <<JSON
{"driftscan_job":1,"command":"synth","output":"$WORK/out-synth","synth":{"frames":12,"width":64,"height":64}}
JSON

# --- preflight failures: one clear message each, quickly
for case in "closed:unreachable" "badkey:authentication" "missing:not found" "oldver:version mismatch"; do
  prof=${case%%:*}; want=${case#*:}
  t0=$(date +%s)
  "$LAUNCH" -p "$prof" "$WORK/synth.json" > "$WORK/$prof.out" 2> "$WORK/$prof.err"
  rc=$?; dt=$(( $(date +%s) - t0 ))
  msg=$(grep '^driftscan-launch:' "$WORK/$prof.err" | head -1)
  echo "  $prof -> rc=$rc in ${dt}s: $msg"
  check "$prof: non-zero exit" "[ $rc -ne 0 ]"
  check "$prof: message says '$want'" "grep -q '$want' <<<\"\$msg\""
  check "$prof: within 20 s" "[ $dt -le 20 ]"
done
check "version mismatch names both versions" "grep -q '9.9.9' '$WORK/oldver.err' && grep -q \"\$($BIN/driftscan-engine --version | awk '{print \$2}')\" '$WORK/oldver.err'"

# --- a remote synth run with 2 ranks, events streamed, results fetched
"$LAUNCH" -p remote "$WORK/synth.json" --progress json > "$WORK/remote.events" 2> "$WORK/remote.err"
rc=$?
check "remote synth: exit 0" "[ $rc -eq 0 ]"
check "remote synth: start event from 2 ranks" "grep -q '\"event\":\"start\".*\"ranks\":2' '$WORK/remote.events'"
check "remote synth: progress streamed" "grep -q '\"event\":\"progress\"' '$WORK/remote.events'"
check "remote synth: commands logged" "grep -q '\"message\":\"\$ ssh ' '$WORK/remote.events' && grep -q '\"message\":\"\$ scp ' '$WORK/remote.events'"
check "remote synth: results fetched" "[ -s '$WORK/out-synth/series.tif' ] && [ -s '$WORK/out-synth/series_truth.csv' ]"
check "remote synth: result event has local paths" "grep '\"event\":\"result\"' '$WORK/remote.events' | grep -q '$WORK/out-synth/series.tif'"

# --- a register job: input staged by scp, drift.csv fetched back
if "$BIN/driftscan-engine" --progress none synth --frames 24 --width 64 --height 64 -o "$WORK/local-series" 2>/dev/null; then
  cat > "$WORK/register.json" <<JSON
{"driftscan_job":1,"command":"register","input":"$WORK/local-series/series.tif","output":"$WORK/out-register"}
JSON
  "$LAUNCH" -p remote "$WORK/register.json" --progress json > "$WORK/register.events" 2> "$WORK/register.err"
  rc=$?
  check "remote register: exit 0" "[ $rc -eq 0 ]"
  check "remote register: input staged into the remote job folder" "ls '$WORK'/remote/job-*/series.tif >/dev/null 2>&1"
  check "remote register: drift.csv fetched" "[ \$(wc -l < '$WORK/out-register/drift.csv') -eq 25 ]"
fi

# --- cancel a remote run: SIGTERM to driftscan-launch
cat > "$WORK/long.json" <<JSON
{"driftscan_job":1,"command":"synth","output":"$WORK/out-long","synth":{"frames":20000,"width":256,"height":256}}
JSON
"$LAUNCH" -p remote "$WORK/long.json" --progress json > "$WORK/long.events" 2> "$WORK/long.err" &
LP=$!
for i in $(seq 100); do grep -q '"event":"progress"' "$WORK/long.events" 2>/dev/null && break; sleep 0.2; done
sleep 1
kill -TERM $LP
t0=$(date +%s)
wait $LP; rc=$?; dt=$(( $(date +%s) - t0 ))
echo "  cancel -> rc=$rc in ${dt}s"
check "remote cancel: exit 4" "[ $rc -eq 4 ]"
check "remote cancel: cancelled event" "grep -q '\"event\":\"cancelled\"' '$WORK/long.events'"
check "remote cancel: within 10 s" "[ $dt -le 10 ]"
sleep 1
check "remote cancel: no engine left running" "! pgrep -f 'driftscan-engine --progress json run $WORK/remote' >/dev/null"
RDIR=$(grep -o '"output":"[^"]*/results"' "$WORK/long.events" | head -1 | sed 's/"output":"//; s/"$//')
check "remote cancel: no complete-looking series remotely" "[ -n '$RDIR' ] && [ ! -e '$RDIR/series.tif' ]"
check "remote cancel: nothing fetched" "[ ! -e '$WORK/out-long/series.tif' ]"

[ $fail -eq 0 ] && echo "PASS" || { echo "--- logs:"; tail -n 8 "$WORK"/*.err "$WORK"/*.events 2>/dev/null | cut -c1-400; }
exit $fail
