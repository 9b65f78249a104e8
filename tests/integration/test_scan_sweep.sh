#!/usr/bin/env bash
# scripts/scan-sweep writes one CSV row per configuration with the measured
# and the model's figures side by side, and the figure, both whole or not at
# all; a malformed --shapes is one line and exit 2 with nothing written.
set -euo pipefail
. "$(dirname "$0")/common.sh"
SWEEP="${DRIFTSCAN_SOURCE:?}/scripts/scan-sweep"
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || skip "python3-matplotlib not installed (scripts/install-deps)"
"$SWEEP" --quick --out "$WORK/o" --engine "$ENGINE"
csv="$WORK/o/scan_sweep.csv"
[ -s "$WORK/o/scan_sweep.png" ] || die "no scan_sweep.png"
head -1 "$csv" | grep -q "model_makespan_s,speedup_vs_static,model_speedup_vs_static,efficiency,model_efficiency" ||
  die "CSV header lacks the model columns: $(head -1 "$csv")"
# 2 shapes x 4 global algorithms x 3 strategies.
[ "$(tail -n +2 "$csv" | wc -l)" -eq 24 ] || die "expected 24 configurations, got $(tail -n +2 "$csv" | wc -l)"
/usr/bin/python3 - "$csv" <<'PY' || die "model figures"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    m, s = float(r["model_makespan_s"]), float(r["model_speedup_vs_static"])
    assert m > 0 and s > 0, r
    if r["strategy"] == "reduce-then-scan":
        assert abs(s - 1.0) < 1e-12, r  # the static scan against itself
PY
ls "$WORK/o" | grep -q tmp && die "a temporary file was left behind"
set +e
"$SWEEP" --out "$WORK/bad" --engine "$ENGINE" --shapes 4by4 2> "$WORK/err"
code=$?
set -e
[ "$code" -eq 2 ] || die "--shapes 4by4: exit $code, expected 2"
[ "$(wc -l < "$WORK/err")" -eq 1 ] || die "expected one line on stderr: $(cat "$WORK/err")"
[ ! -e "$WORK/bad" ] || die "bad arguments created the output folder"
echo "scan-sweep: 24 configurations with their model figures, CSV and PNG written whole"
