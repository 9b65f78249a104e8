#!/usr/bin/env bash
# Frames scanned at angles off frame 0's pixel grid (--scan-rotation
# 0,45,90,135): turned back, such a frame leaves corners of frame 0's grid
# uncovered. register keeps the rigid registration to the square every frame
# covers and still finds the drift across directions without lattice-period
# jumps, on 1 and 2 ranks; the average fuses every direction on frame 0's
# grid (its corners covered only by the frames that reach them);
# --scan-distortion corrects the lines along each frame's own fast axis;
# --follow gives the batch result; average --drift takes the same frames; a
# non-square frame turned off the grid is one line naming the frame, exit 2.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"

ROT=0,45,90,135
# A hex lattice of period 8 px drifting ~1 px per frame: 12 px over the series.
"$ENGINE" synth --frames 12 --size 128x128 --period 8 --dose 8 --drift-linear 0.9,0.6 --drift-step 0.1 --seed 4 \
  --scan-rotation $ROT --out rev.tif --progress none
[ "$(sed -n 3p rev_truth.csv | cut -d, -f4)" = 45 ] || die "frame 1 of the series is not at 45"

"$ENGINE" register rev.tif --out rev-1 --scan-rotation $ROT --threads 2 --progress none
"${MPIRUN[@]}" -np 2 "$ENGINE" register rev.tif --out rev-2 --scan-rotation $ROT --threads 1 --progress none
for d in rev-1 rev-2; do
  for f in average.tif coverage.tif drift.csv report.json; do [ -s "$d/$f" ] || die "$d: $f missing"; done
done
python3 - <<'PY' || die "drift across directions off the pixel grid"
import csv
rows = lambda p: list(csv.DictReader(open(p)))
truth, one, two = rows("rev_truth.csv"), rows("rev-1/drift.csv"), rows("rev-2/drift.csv")
err = max(max(abs(float(a["dx"]) - float(t["dx"])), abs(float(a["dy"]) - float(t["dy"]))) for a, t in zip(one, truth))
ranks = max(max(abs(float(a["dx"]) - float(b["dx"])), abs(float(a["dy"]) - float(b["dy"]))) for a, b in zip(one, two))
span = max(abs(float(t["dx"])) for t in truth)
used = all(r["used"] == "1" and r["flags"] == "" for r in one)
print(f"0/45/90/135: drift error {err:.4f} px over a drift of {span:.1f} px (period 8), 1 vs 2 ranks {ranks:.5f} px")
assert span > 8 and err < 0.1 and ranks <= 0.01 and used, (err, ranks, used)
PY

# The fused average matches the noise-free reference where the frames
# cover it; the corners of frame 0's grid are covered by the 0° and 90°
# frames only (a 45° frame turned back does not reach them).
read -r ncc half < <("$BIN/tiff_ncc" rev-1/average.tif rev_reference.tif rev-1/coverage.tif 6)
read -r ncc_all all < <("$BIN/tiff_ncc" rev-1/average.tif rev_reference.tif rev-1/coverage.tif 12)
echo "fused average vs reference: NCC $ncc over $half of the frame (6+ frames), $all covered by all 12"
python3 -c "import sys; sys.exit(0 if $ncc > 0.95 and $half > 0.8 and $all < 0.85 and $all > 0.5 else 1)" ||
  die "fused average: NCC $ncc over $half (6+ frames), $all (all frames)"

# average --drift with the truth takes the same frames the same way.
"$ENGINE" average rev.tif --drift rev_truth.csv --scan-rotation $ROT --out rev-avg --progress none
read -r ncc_t _ < <("$BIN/tiff_ncc" rev-avg/average.tif rev_reference.tif rev-avg/coverage.tif 6)
python3 -c "import sys; sys.exit(0 if $ncc_t > 0.95 else 1)" || die "average --drift (truth): NCC $ncc_t"
echo "ok: average --drift with the truth: NCC $ncc_t"

# Followed while written: the batch run's drift and average.
[ -x "$BIN/follow_writer" ] && [ -x "$BIN/tiff_compare" ] || die "follow_writer / tiff_compare not built"
"$BIN/follow_writer" rev.tif live.tif --frames 12 --rate 20 >/dev/null &
writer=$!
"$ENGINE" register live.tif --follow --until-frames 12 --idle-timeout 20 --out rev-f --scan-rotation $ROT \
  --progress none
wait $writer
"$ENGINE" register rev.tif --out rev-b1 --scan-rotation $ROT --progress none
d=$(max_drift_deviation rev-f/drift.csv rev-b1/drift.csv)
a=$("$BIN/tiff_compare" rev-f/average.tif rev-b1/average.tif)
awk "BEGIN{exit !($d <= 0.01 && $a <= 1e-3)}" || die "follow off the pixel grid: drift $d px, average $a from batch"
echo "ok: follow off the pixel grid = batch: drift deviation $d px, average relative difference $a"

# The scan distortion corrected jointly: each line's jitter along its own
# fast axis, 45° ones included.
TIMING=(--scan-dwell 2e-6 --line-flyback 0.25)
"$ENGINE" synth --frames 12 --size 128x128 --dose 10 --drift-linear 3,1.5 --drift-wobble 1 --wobble-period 4 \
  --jitter 0.3 --seed 3 "${TIMING[@]}" --scan-rotation $ROT --out sd.tif --progress none
"$ENGINE" register sd.tif --out sd-1 --threads 2 --scan-distortion "${TIMING[@]}" --scan-rotation $ROT --progress none
read -r corrected rigid jitter zero angles < <(python3 "$TESTS_DIR/line_errors.py" sd-1 sd_lines_truth.csv) ||
  die "scan distortion off the pixel grid: no line errors"
echo "per-line drift error $corrected px (rigid $rigid), jitter error $jitter px ($zero if 0), angles $angles"
[ "$angles" = 0,45,90,135 ] || die "lines.csv angles $angles"
awk "BEGIN{exit !($corrected < 0.25 * $rigid && $jitter < 0.7 * $zero)}" ||
  die "scan distortion off the pixel grid: lines $corrected px (rigid $rigid), jitter $jitter ($zero if 0)"

# A non-square frame turned off the grid: one line naming the frame, exit 2.
"$ENGINE" synth --frames 4 --size 96x64 --dose 8 --seed 1 --out wide.tif --progress none
set +e
"$ENGINE" register wide.tif --out wide-r --scan-rotation 0,30 --progress none > wide.log 2>&1
rc=$?
set -e
[ $rc = 2 ] || die "non-square frames at 30°: exit $rc, expected 2"
grep -q "frame 1: scan rotation 30° turns its 96x64 raster off frame 0's grid" wide.log ||
  die "non-square frames at 30°: $(cat wide.log)"
[ ! -e wide-r/drift.csv ] || die "non-square frames at 30°: drift.csv written"
echo "ok: non-square frames off the grid refused: $(grep -m1 'frame 1' wide.log)"
