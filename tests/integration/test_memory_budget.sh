#!/usr/bin/env bash
# The memory budget (#36): --memory-budget-mb is the job's
# execution.memory_budget_mb (2048 by default), a budget under 64 MB is one
# line naming the flag, exit 2, nothing written; a register run's
# report.json states the budget and the peak it reached (VmHWM), on the
# serial and on the distributed (scan-distortion) executor.
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
fail=0
"$ENGINE" --progress none synth --frames 6 --size 64x64 --seed 3 --out s.tif > /dev/null || die "synth"
"$ENGINE" --progress none register s.tif --out r --print-job > job.json || die "print-job"
check "default budget 2048 MB in the job" \
  "python3 -c 'import json,sys; sys.exit(json.load(open(\"job.json\"))[\"execution\"][\"memory_budget_mb\"] != 2048)'"
"$ENGINE" --progress none register s.tif --out small --memory-budget-mb 10 2> err.txt
rc=$?
check "a budget under 64 MB: exit 2 ($rc)" "[ $rc -eq 2 ]"
check "one line naming the flag: $(head -c 200 err.txt)" "[ \$(wc -l < err.txt) -eq 1 ] && grep -q 'memory' err.txt"
check "nothing written" "[ ! -e small/drift.csv ]"
for mode in rigid distortion; do
  extra=()
  [ "$mode" = distortion ] && extra=(--scan-distortion --scan-dwell 2e-6 --line-flyback 0.25)
  "$ENGINE" --progress none register s.tif --out "$mode" --memory-budget-mb 300 "${extra[@]}" > /dev/null ||
    die "register ($mode)"
  check "$mode: report states the budget and a peak within it" \
    "python3 -c 'import json,sys; m=json.load(open(\"$mode/report.json\"))[\"memory\"]; print(m); sys.exit(not (m[\"budget_mb\"] == 300 and 0 < m[\"peak_mb\"] < 300))'"
done
exit $fail
