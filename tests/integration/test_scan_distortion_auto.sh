#!/usr/bin/env bash
# scan.auto_distortion: register corrects the scan distortion, unasked, of a
# series whose file records its scan clock (here a Velox EMD with the Scan
# block Velox writes), says so in one line, and keeps the rigid result alone
# when told (--auto-scan-distortion off), when the file records no clock, or
# (with a warning, exit 0) when the correction could not run on the frames.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
"$BIN/velox_scanned_series" scanned.emd >/dev/null
"$BIN/velox_scanned_series" unscanned.emd --no-scan-block >/dev/null

"$ENGINE" register scanned.emd --out auto --threads 2 --progress plain >auto.log 2>&1 || { cat auto.log; die "auto run failed"; }
grep -q "the file records its scan clock (Velox Scan metadata): the scan distortion is corrected" auto.log ||
  { cat auto.log; die "auto run did not say why it corrected"; }
for f in average.tif average_rigid.tif lines.csv drift.csv report.json; do [ -s "auto/$f" ] || die "auto: $f missing"; done
[ "$(wc -l < auto/lines.csv)" -eq $((8 * 128 + 1)) ] || die "auto: lines.csv should have one row per line"
python3 - <<'PY' || die "auto: report.json has no scan_distortion"
import json
r = json.load(open("auto/report.json"))
assert r["scan_distortion"]["rounds"], r.get("scan_distortion")
PY

"$ENGINE" register scanned.emd --out off --threads 2 --auto-scan-distortion off --progress none
"$ENGINE" register unscanned.emd --out plain --threads 2 --progress none
for d in off plain; do
  [ -s "$d/average.tif" ] && [ -s "$d/drift.csv" ] || die "$d: rigid outputs missing"
  [ ! -e "$d/lines.csv" ] && [ ! -e "$d/average_rigid.tif" ] || die "$d: corrected although not to be"
done

# Bands that do not fit a frame: an asked-for run is refused (exit 2), an
# unasked one warns and keeps the rigid result.
"$ENGINE" register scanned.emd --out wide --threads 2 --band-lines 200 --progress plain >wide.log 2>&1 ||
  { cat wide.log; die "auto run with unfit bands failed"; }
grep -q "warning: the scan distortion is not corrected although the file records its scan clock: .*band lines" wide.log ||
  { cat wide.log; die "no warning for unfit bands"; }
[ -s wide/average.tif ] && [ ! -e wide/lines.csv ] || die "wide: the rigid result alone expected"
rc=0
"$ENGINE" register scanned.emd --out asked --threads 2 --band-lines 200 --scan-distortion --progress none 2>asked.err || rc=$?
[ "$rc" -eq 2 ] || die "asked-for correction with unfit bands: rc $rc, expected 2"
grep -q "band lines" asked.err || die "asked-for refusal does not name the setting"
echo "PASS"
