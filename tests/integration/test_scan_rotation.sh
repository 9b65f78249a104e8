#!/usr/bin/env bash
# Frames scanned in several directions (--scan-rotation): synth writes the
# rotated frames with their truth; register turns them back, registers them
# across directions without lattice-period jumps (a drift of more than a
# period over the series) on 1 and 2 ranks, and fuses them on frame 0's grid;
# --scan-distortion corrects them jointly (one drift path, each line's jitter
# along its own fast axis); --follow takes them turned back as they come
# (with --scan-distortion, corrected over the frames taken once it ends);
# rotations that do not fit the series are one line naming the frame, exit 2,
# nothing written. Without rotations nothing changes (the bitcheck harness).
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"

# A revolving scan (0/90/180/270) and an orthogonal pair series over a hex
# lattice of period 8 px drifting ~1 px per frame: 12 px over the series.
"$ENGINE" synth --frames 12 --size 96x96 --period 8 --dose 8 --drift-linear 0.9,0.6 --drift-step 0.1 --seed 4 \
  --scan-rotation 0,90,180,270 --out rev.tif --progress none
"$ENGINE" synth --frames 12 --size 96x96 --period 8 --dose 8 --drift-linear 0.9,0.6 --drift-step 0.1 --seed 5 \
  --scan-rotation 0,90 --out pair.tif --progress none
head -1 rev_truth.csv | grep -q '^frame,dx,dy,scan_rotation_deg$' || die "truth without its scan_rotation_deg column"
[ "$(sed -n 3p rev_truth.csv | cut -d, -f4)" = 90 ] || die "frame 1 of the revolving series is not at 90"

for s in rev pair; do
  rot=$([ $s = rev ] && echo 0,90,180,270 || echo 0,90)
  "$ENGINE" register $s.tif --out $s-1 --scan-rotation $rot --threads 2 --progress none
  "${MPIRUN[@]}" -np 2 "$ENGINE" register $s.tif --out $s-2 --scan-rotation $rot --threads 1 --progress none
  for d in $s-1 $s-2; do
    for f in average.tif coverage.tif drift.csv report.json; do [ -s "$d/$f" ] || die "$d: $f missing"; done
  done
  python3 - "$s" <<'PY' || die "$s: drift across directions"
import csv, sys
s = sys.argv[1]
rows = lambda p: list(csv.DictReader(open(p)))
truth, one, two = rows(f"{s}_truth.csv"), rows(f"{s}-1/drift.csv"), rows(f"{s}-2/drift.csv")
err = max(max(abs(float(a["dx"]) - float(t["dx"])), abs(float(a["dy"]) - float(t["dy"]))) for a, t in zip(one, truth))
ranks = max(max(abs(float(a["dx"]) - float(b["dx"])), abs(float(a["dy"]) - float(b["dy"]))) for a, b in zip(one, two))
span = max(abs(float(t["dx"])) for t in truth)
used = all(r["used"] == "1" for r in one)
print(f"{s}: drift error {err:.4f} px over a drift of {span:.1f} px (period 8), 1 vs 2 ranks {ranks:.5f} px")
assert span > 8 and err < 0.2 and ranks <= 0.01 and used, (err, ranks, used)
PY
done

# Rotations count from frame 0's: 37/127/217/307 is the revolving scan
# above, on frame 0's grid (the same drift, byte for byte).
"$ENGINE" register rev.tif --out rev-37 --scan-rotation 37,127,217,307 --threads 2 --progress plain > rev-37.log 2>&1 ||
  die "rotations 37,127,217,307: $(tail -n 2 rev-37.log)"
cmp -s rev-37/drift.csv rev-1/drift.csv || die "rotations 37,127,217,307: drift.csv differs from 0,90,180,270's"
grep -q "relative to frame 0's: 0,90,180,270" rev-37.log || die "rotations 37,127,...: not said relative to frame 0"
echo "ok: rotations are taken relative to frame 0's"

# The fused average on frame 0's grid matches the noise-free reference
# (the frames turned back: without that the average would be a blur of four
# orientations).
read -r ncc covered < <("$BIN/tiff_ncc" rev-1/average.tif rev_reference.tif rev-1/coverage.tif 12)
echo "fused average vs reference: NCC $ncc over $covered of the frame"
python3 -c "import sys; sys.exit(0 if $ncc > 0.95 and $covered > 0.6 else 1)" || die "fused average: NCC $ncc"

# Followed while written (a growing TIFF, frames appended at 20/s): taken
# turned back as they come, they give the one-rank batch run's drift (within
# 0.01 px) and average (within 1e-5 relative), as for one direction.
[ -x "$BIN/follow_writer" ] && [ -x "$BIN/tiff_compare" ] || die "follow_writer / tiff_compare not built"
"$BIN/follow_writer" rev.tif live.tif --frames 12 --rate 20 >/dev/null &
writer=$!
"$ENGINE" register live.tif --follow --until-frames 12 --idle-timeout 20 --out rev-f --scan-rotation 0,90,180,270 \
  --progress none
wait $writer
"$ENGINE" register rev.tif --out rev-b1 --scan-rotation 0,90,180,270 --progress none
d=$(max_drift_deviation rev-f/drift.csv rev-b1/drift.csv)
a=$("$BIN/tiff_compare" rev-f/average.tif rev-b1/average.tif)
awk "BEGIN{exit !($d <= 0.01 && $a <= 1e-5)}" || die "follow across directions: drift $d px, average $a from batch"
echo "ok: follow across directions = batch: drift deviation $d px, average relative difference $a"
# A follow that ends before every given rotation was used: the results
# stand (the count was unknown at the start) and the report says so.
"$ENGINE" register rev.tif --follow --until-frames 3 --idle-timeout 20 --out rev-f3 --scan-rotation 0,90,180,270 \
  --progress none
grep -q '4 scan rotations were given but only 3 frames were taken' rev-f3/report.json ||
  die "follow with more rotations than frames taken: no warning in report.json"

# The scan distortion corrected jointly across directions: a revolving,
# raster-scanned series with line jitter, on 1 and 2 ranks; lines.csv gains
# each frame's angle_deg, the per-line drift follows the truth far better
# than one shift per frame, the jitter is found along each frame's own fast
# axis, and the ranks agree.
TIMING=(--scan-dwell 2e-6 --line-flyback 0.25)
"$ENGINE" synth --frames 12 --size 128x128 --dose 10 --drift-linear 3,1.5 --drift-wobble 1 --wobble-period 4 \
  --jitter 0.3 --seed 3 "${TIMING[@]}" --scan-rotation 0,90,180,270 --out sd.tif --progress none
"$ENGINE" register sd.tif --out sd-1 --threads 2 --scan-distortion "${TIMING[@]}" --scan-rotation 0,90,180,270 \
  --progress none
"${MPIRUN[@]}" -np 2 "$ENGINE" register sd.tif --out sd-2 --threads 1 --scan-distortion "${TIMING[@]}" \
  --scan-rotation 0,90,180,270 --progress none
head -1 sd-1/lines.csv | grep -q ',angle_deg$' || die "lines.csv without its angle_deg column"
read -r corrected rigid jitter zero angles < <(python3 "$TESTS_DIR/line_errors.py" sd-1 sd_lines_truth.csv) ||
  die "scan distortion across directions: no line errors"
ranks=$(python3 - <<'PY'
import csv
rows = lambda p: list(csv.DictReader(open(p)))
print(max(abs(float(a[k]) - float(b[k])) for a, b in zip(rows("sd-1/lines.csv"), rows("sd-2/lines.csv"))
          for k in ("dx", "dy", "jitter")))
PY
)
echo "per-line drift error $corrected px (rigid $rigid), jitter error $jitter px ($zero if 0), 1 vs 2 ranks $ranks px," \
  "angles $angles"
[ "$angles" = 0,90,180,270 ] || die "lines.csv angles $angles"
awk "BEGIN{exit !($corrected < 0.25 * $rigid && $jitter < 0.7 * $zero && $ranks <= 0.01)}" ||
  die "scan distortion across directions: lines $corrected px (rigid $rigid), jitter $jitter ($zero if 0), ranks $ranks"

# Another detector of the same scan: average --lines with the rotations
# gives the corrected average again. Where the two coverages agree: the
# lines' map (drift at each line's middle) and the run's (the path) can put
# a frame's footprint edge a hair apart, and a grid point on it is then
# inside one and outside the other (seed 3 after a change of the line fits:
# 1 pixel of 24568, which alone made the whole image differ by 0.09).
"$ENGINE" average sd.tif --lines sd-1/lines.csv --scan-rotation 0,90,180,270 "${TIMING[@]}" --out sd-avg \
  --progress none
read -r diff edge < <("$BIN/tiff_compare" sd-avg/average.tif sd-1/average.tif sd-avg/coverage.tif sd-1/coverage.tif)
python3 -c "import sys; sys.exit(0 if $diff < 1e-3 and $edge <= 10 else 1)" ||
  die "average --lines differs from the run's by $diff ($edge pixels of another coverage)"

# Followed while written, with the correction: the follow registers rigidly
# as the frames come, then the frames taken are registered again with the
# correction, as the batch run above (drift.csv and lines.csv the same, byte
# for byte); on 2 ranks the second part runs on both, as sd-2 did.
"$BIN/follow_writer" sd.tif live-sd.tif --frames 12 --rate 20 >/dev/null &
writer=$!
"$ENGINE" register live-sd.tif --follow --until-frames 12 --idle-timeout 20 --out sd-f --threads 2 --scan-distortion \
  "${TIMING[@]}" --scan-rotation 0,90,180,270 --progress none
wait $writer
"${MPIRUN[@]}" -np 2 "$ENGINE" register sd.tif --follow --until-frames 12 --idle-timeout 20 --out sd-f2 --threads 1 \
  --scan-distortion "${TIMING[@]}" --scan-rotation 0,90,180,270 --progress none
for f in drift.csv lines.csv; do
  cmp -s sd-f/$f sd-1/$f || die "follow with --scan-distortion: $f differs from the batch run's"
  cmp -s sd-f2/$f sd-2/$f || die "follow with --scan-distortion on 2 ranks: $f differs from the batch run's"
done
grep -q '"scan_distortion"' sd-f/report.json || die "follow with --scan-distortion: no scan_distortion block"
echo "ok: follow with --scan-distortion = the batch run over the frames taken (1 and 2 ranks)"
# The follow's checkpoint outlives the correction: --follow --resume of the
# grown series takes the first frames from it, and corrects them all again.
"$ENGINE" register live-sd.tif --follow --until-frames 8 --idle-timeout 20 --out sd-g --threads 2 --scan-distortion \
  "${TIMING[@]}" --scan-rotation 0,90,180,270 --progress none
[ -f sd-g/checkpoint.dsck ] || die "follow with --scan-distortion: the follow's checkpoint was removed"
"$ENGINE" register live-sd.tif --follow --resume --until-frames 12 --idle-timeout 20 --out sd-g --threads 2 \
  --scan-distortion "${TIMING[@]}" --scan-rotation 0,90,180,270 --progress plain > resumed.log 2>&1 ||
  die "follow --resume with --scan-distortion failed: $(tail -n 3 resumed.log)"
grep -q "(8 from the checkpoint)" resumed.log || die "follow --resume: the follow's checkpoint was not used"
cmp -s sd-g/drift.csv sd-1/drift.csv || die "follow --resume with --scan-distortion: drift.csv differs from the batch run's"
echo "ok: the follow's checkpoint is kept after the correction, and --resume extends it"

# Bad input: one line naming the frame or setting, exit 2, nothing written.
refuse() {  # refuse NAME EXPECTED-TEXT COMMAND...
  local name=$1 want=$2
  shift 2
  set +e
  "$@" > out.txt 2> err.txt
  local rc=$?
  set -e
  [ $rc -eq 2 ] || die "$name: exit $rc, expected 2 ($(cat err.txt))"
  [ "$(grep -c . err.txt)" -eq 1 ] || die "$name: expected one line, got: $(cat err.txt)"
  grep -qF -- "$want" err.txt || die "$name: '$want' not in: $(cat err.txt)"
  echo "ok: $name: $(cat err.txt)"
}
"$ENGINE" synth --frames 3 --size 64x32 --period 8 --scan-rotation 0,180 --out wide.tif --progress none
"$ENGINE" synth --frames 2 --size 64x64 --period 8 --out two.tif --progress none
refuse "more rotations than frames" "two.tif: scan.rotation: 3 rotations for 2 frame(s)" \
  "$ENGINE" register two.tif --out bad1 --scan-rotation 0,90,180 --progress none
refuse "90 degrees on non-square frames" "wide.tif: frame 1: scan rotation 90° turns its 64x32 raster" \
  "$ENGINE" register wide.tif --out bad2 --scan-rotation 0,90 --progress none
refuse "synth: more rotations than frames" "3 rotations for 2 frame(s)" \
  "$ENGINE" synth --frames 2 --size 64x64 --scan-rotation 0,90,180 --out bad3/s.tif --progress none
refuse "a rotation that is not a number" "--scan-rotation" \
  "$ENGINE" register two.tif --out bad4 --scan-rotation 0,east --progress none
for d in bad1 bad2 bad3 bad4; do [ ! -e $d ] || die "$d was written for a refused job"; done
# Half turns fit non-square frames.
"$ENGINE" register wide.tif --out wide-ok --scan-rotation 0,180 --progress none
[ -s wide-ok/average.tif ] || die "0,180 on non-square frames"
echo "all ok"
