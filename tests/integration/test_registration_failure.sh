#!/usr/bin/env bash
# A series of pure noise is not "registered": driftscan-engine register ends
# with exit code 5 and a one-line message, on 1 rank and on 2 ranks alike
# (the same frames flagged), with drift.csv and report.json saying which
# frames failed and no average.tif; driftscan-launch keeps the code. A real
# low-dose series next to it registers with no frame flagged.
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
python3 "$TESTS_DIR/noise_series.py" noise.tif 8 96 1 || die "noise series not written"

for ranks in 1 2; do
  out="noise_$ranks"
  mkdir -p "$out" && echo "an earlier run's" > "$out/average.tif"
  "${MPIRUN[@]}" -np $ranks "$ENGINE" register noise.tif --out "$out" --progress json > "$out.events" 2> "$out.err"
  rc=$?
  check "$ranks rank(s): exit code 5" "[ $rc -eq 5 ]"
  check "$ranks rank(s): one error event naming the failure" \
    "[ \$(grep -c '\"event\":\"error\"' '$out.events') -eq 1 ] && grep -q 'noise.tif: registration failed: [0-9]* of 7 frames' '$out.events'"
  check "$ranks rank(s): one warning line for the frames without a peak" \
    "[ \$(grep -c 'without a significant correlation peak against' '$out.events') -eq 1 ]"
  check "$ranks rank(s): no average (an earlier one removed)" "[ ! -e '$out/average.tif' ] && [ ! -e '$out/coverage.tif' ]"
  check "$ranks rank(s): report.json says registration_failed" \
    "grep -q '\"status\": \"registration_failed\"' '$out/report.json'"
  check "$ranks rank(s): no result event" "! grep -q '\"event\":\"result\"' '$out.events'"
  # frame,flags,used of every frame
  awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next } { print $1, $c["used"], $c["flags"] }' \
    "$out/drift.csv" > "$out.flags"
done
check "1 and 2 ranks flag the same frames" "cmp -s noise_1.flags noise_2.flags"
check "every frame but 0 unused" "[ \$(awk '\$1 > 0 && \$2 == 0' noise_1.flags | wc -l) -eq 7 ]"
cat noise_1.flags

# Through driftscan-launch (local profile): the engine's code, not 3.
export XDG_CONFIG_HOME="$WORK/config"
mkdir -p "$XDG_CONFIG_HOME/driftscan"
echo '{"profiles":[{"name":"two","kind":"local","ranks":2,"threads":1}]}' > "$XDG_CONFIG_HOME/driftscan/profiles.json"
echo "{\"driftscan_job\":1,\"command\":\"register\",\"input\":\"$WORK/noise.tif\",\"output\":\"$WORK/launched\"}" > job.json
"$LAUNCH" -p two job.json --progress json > launch.events 2> launch.err
rc=$?
check "driftscan-launch: exit code 5" "[ $rc -eq 5 ]"

# A real low-dose series: no flag, exit 0.
"$ENGINE" synth --frames 12 --size 96x96 --dose 1 --seed 3 --out low.tif --progress none
"${MPIRUN[@]}" -np 2 "$ENGINE" register low.tif --out low --progress none
rc=$?
check "low-dose series: exit 0" "[ $rc -eq 0 ]"
check "low-dose series: no frame flagged or unused" \
  "awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[\$i] = i; next } \$c[\"used\"] != 1 || \$c[\"flags\"] != \"\" { bad = 1 } END { exit bad }' low/drift.csv"
exit $fail
