#!/usr/bin/env bash
# register --scan-distortion on a raster-scanned synthetic series: the
# outputs appear as a set (corrected average in specimen coordinates,
# lines.csv, the rigid average beside it), the per-line drift is close to the
# truth and far better than one shift per frame, 1 and 3 ranks agree, and
# impossible timing or bands are one-line errors (exit 2) that write nothing.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
TIMING=(--scan-dwell 2e-6 --line-flyback 0.25)
"$ENGINE" synth --frames 12 --size 128x128 --dose 10 --drift-linear 3,1.5 --drift-wobble 1 --wobble-period 4 \
  --jitter 0.3 --seed 3 "${TIMING[@]}" --out s.tif --progress none
[ -s s_lines_truth.csv ] || die "synth wrote no per-line truth"

"$ENGINE" register s.tif --out one --threads 2 --scan-distortion "${TIMING[@]}" --progress none
"${MPIRUN[@]}" -np 3 "$ENGINE" register s.tif --out three --threads 1 --scan-distortion "${TIMING[@]}" --progress none
for d in one three; do
  for f in average.tif coverage.tif sigma.tif lines.csv average_rigid.tif coverage_rigid.tif sigma_rigid.tif drift.csv \
    report.json; do
    [ -s "$d/$f" ] || die "$d: $f missing"
  done
  ! ls -a "$d" | grep -q tmp || die "$d: temporary file left"
  [ "$(wc -l < "$d/lines.csv")" -eq $((12 * 128 + 1)) ] || die "$d: lines.csv should have one row per line"
done

TESTS_DIR="$TESTS_DIR" python3 - <<'PY' || die "per-line drift or rank agreement"
import csv, json, os, sys
def rows(p): return list(csv.DictReader(open(p)))
one, three, truth = rows("one/lines.csv"), rows("three/lines.csv"), rows("s_lines_truth.csv")
worst = max(abs(float(a[k]) - float(b[k])) for a, b in zip(one, three) for k in ("dx", "dy", "jitter"))
assert worst <= 0.01, f"1 and 3 ranks differ by {worst} px"
sys.path.insert(0, os.environ["TESTS_DIR"])
from line_errors import drift_rms
corrected = drift_rms([(float(r["dx"]), float(r["dy"])) for r in one], truth)
rigid_by_frame = {int(r["frame"]): (float(r["dx"]), float(r["dy"])) for r in rows("one/drift.csv")}
rigid = drift_rms([rigid_by_frame[int(r["frame"])] for r in one], truth)
print(f"per-line drift error: corrected {corrected:.4f} px, rigid {rigid:.4f} px")
assert rigid > 0.5 and corrected < 0.2 and corrected < 0.3 * rigid
report = json.load(open("one/report.json"))["scan_distortion"]
assert report["rounds"] and report["timing"]["dwell_given"] and report["files"]["lines"].endswith("lines.csv")
# The line fits' own precision: a count over every rank's lines, the same on 1 and 3 ranks (to 1e-3: the ranks'
# sums round differently in the last bit, and the template's Wiener filter spreads that over every pixel; measured
# 5e-5); finer than the 0.3 px jitter it measures.
p1 = report["jitter_precision_px"]
p3 = json.load(open("three/report.json"))["scan_distortion"]["jitter_precision_px"]
assert 0 < p1 < 0.3 and abs(p1 - p3) <= 1e-3 * p1, (p1, p3)
files = json.load(open("one/report.json"))["files"]  # what a reader of the report takes as the run's outputs
assert files["average"].endswith("/average.tif") and files["average_rigid"].endswith("/average_rigid.tif"), files
assert files["lines"].endswith("/lines.csv") and files["coverage"].endswith("/coverage.tif"), files
assert files["sigma"].endswith("/sigma.tif") and files["sigma_rigid"].endswith("/sigma_rigid.tif"), files
# Per-line standard errors: finite and positive, the same on 1 and 3 ranks (the
# path's from the same band samples; the jitter's gathered from every rank).
for k in ("sigma_dx", "sigma_dy", "sigma_jitter"):
    assert all(0 < float(r[k]) < 1 for r in one), k
    worst = max(abs(float(a[k]) - float(b[k])) for a, b in zip(one, three))
    assert worst <= 0.01, f"{k}: 1 and 3 ranks differ by {worst} px"
common = report["line_sigma"]["common_offset_sigma_px"]
assert len(common) == 2 and all(0 < c < 0.5 for c in common), common
PY

# A frame the user excludes stays out of the corrected average too, on 1 and
# 3 ranks alike (the ranks agree on which frames are out).
"$ENGINE" register s.tif --out ex1 --threads 2 --scan-distortion --exclude 4 "${TIMING[@]}" --progress none
"${MPIRUN[@]}" -np 3 "$ENGINE" register s.tif --out ex3 --threads 1 --scan-distortion --exclude 4 "${TIMING[@]}" \
  --progress none
python3 - <<'PY' || die "an excluded frame in the corrected average, or ranks disagree"
import csv, json
for d in ("ex1", "ex3"):
    r = json.load(open(f"{d}/report.json"))["scan_distortion"]
    assert r["left_out"] == [4] and r["not_followed"] == [], (d, r["left_out"], r["not_followed"])
one, three = list(csv.DictReader(open("ex1/lines.csv"))), list(csv.DictReader(open("ex3/lines.csv")))
worst = max(abs(float(a[k]) - float(b[k])) for a, b in zip(one, three) for k in ("dx", "dy", "jitter"))
assert worst <= 0.01, f"1 and 3 ranks differ by {worst} px with frame 4 left out"
PY

# Fly-back hysteresis and the line field: line_field.csv beside lines.csv,
# the same on 1 and 3 ranks, the series' hysteresis found (1 px x 0.5-1.5 at
# a line's start: 20 frames, so that the drift carries the specimen the
# first frames' line starts show past the field's extent in the last ones),
# and average --lines applies it (reads it beside lines.csv; compared with
# the register run's average below).
"$ENGINE" synth --frames 20 --size 128x128 --dose 10 --drift-linear 3,1.5 --drift-wobble 1 --wobble-period 4 \
  --jitter 0.1 --seed 3 --scan-hysteresis 1 --hysteresis-length 8 "${TIMING[@]}" --out h.tif --progress none
"$ENGINE" register h.tif --out h1 --threads 2 --scan-distortion --line-field-knots 8 "${TIMING[@]}" --progress none
"${MPIRUN[@]}" -np 3 "$ENGINE" register h.tif --out h3 --threads 1 --scan-distortion --line-field-knots 8 \
  "${TIMING[@]}" --progress none
"$ENGINE" average h.tif --lines h1/lines.csv "${TIMING[@]}" --out hre --progress plain 2> hre.err >/dev/null
grep -q "line fields from .*line_field.csv" hre.err || die "average --lines did not read line_field.csv: $(cat hre.err)"
python3 - <<'PY' || die "line field"
import csv, json
one, three = list(csv.DictReader(open("h1/line_field.csv"))), list(csv.DictReader(open("h3/line_field.csv")))
assert len(one) == 20 * 8 and [r["frame"] for r in one] == [r["frame"] for r in three], len(one)
worst = max(abs(float(a["dx"]) - float(b["dx"])) for a, b in zip(one, three))
assert worst <= 0.01, f"1 and 3 ranks' line fields differ by {worst} px"
# The field at a line's first sample (a cubic B-spline: knots 0, 1, 2 weigh 1/6, 4/6, 1/6), averaged over frames.
c = {(int(r["frame"]), int(r["knot"])): float(r["dx"]) for r in one}
start = sum((c[k, 0] + 4 * c[k, 1] + c[k, 2]) / 6 for k in range(20)) / 20
print(f"line field at a line's first sample, mean over frames: {start:.3f} px (truth about 1)")
assert 0.8 < start < 1.2, start
report = json.load(open("h1/report.json"))["scan_distortion"]
assert report["line_field_knots"] == 8 and report["files"]["line_field"].endswith("/line_field.csv"), report
assert not __import__("os").path.exists("one/line_field.csv"), "a run without the field wrote line_field.csv"
PY
# A field over half the line: the 20 frames drift ~57 px along the fast
# axis, less than its 64 samples (+2), so a line's first few samples cannot
# be measured; the run says so.
"$ENGINE" register h.tif --out hwide --threads 2 --scan-distortion --line-field-knots 8 --line-field-extent 0.5 \
  "${TIMING[@]}" --progress plain 2> hwide.err >/dev/null
grep -q "each line's first [0-9]* samples show specimen no other frame saw" hwide.err ||
  die "no warning about the unmeasured line starts: $(grep -i warn hwide.err)"
python3 -c "
import json; u = json.load(open('hwide/report.json'))['scan_distortion']['line_field_unseen_samples']
assert 0 < u < 20, u
assert json.load(open('h1/report.json'))['scan_distortion']['line_field_unseen_samples'] == 0" ||
  die "line_field_unseen_samples in report.json"
# The synth's hysteresis truth; a run's line_field.csv missing (average
# --lines warns: the run fitted fields) or malformed (one line naming the
# file, exit 2, nothing written).
python3 -c "
import csv; rows = list(csv.DictReader(open('h_hysteresis_truth.csv')))
assert len(rows) == 20 and all(0.5 <= float(r['amplitude']) <= 1.5 and float(r['decay']) == 8 for r in rows), rows" ||
  die "h_hysteresis_truth.csv"
mkdir -p nofield && cp h1/lines.csv h1/report.json nofield/
"$ENGINE" average h.tif --lines nofield/lines.csv "${TIMING[@]}" --out hnofield --progress plain 2> hnofield.err >/dev/null
grep -q "fitted line fields, but .*line_field.csv is missing" hnofield.err || die "no warning: $(cat hnofield.err)"
for bad in oneknot junk; do
  mkdir -p "$bad" && cp h1/lines.csv "$bad/"
  if [ "$bad" = oneknot ]; then
    { echo "frame,knot,sample,dx"; for k in $(seq 0 19); do echo "$k,0,-4.0,1.0"; done; } > "$bad/line_field.csv"
  else
    sed '2,$s/$/,junk/' h1/line_field.csv > "$bad/line_field.csv"
  fi
  set +e
  "$ENGINE" average h.tif --lines "$bad/lines.csv" "${TIMING[@]}" --out "${bad}_out" --progress none 2> "$bad.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] && grep -q "$bad/line_field.csv" "$bad.err" && [ "$(wc -l < "$bad.err")" = 1 ] &&
    [ ! -e "${bad}_out/average.tif" ] || die "$bad line_field.csv: rc $rc, $(cat "$bad.err")"
done
set +e
"$ENGINE" register h.tif --out hbad --scan-distortion --line-field-knots 2 "${TIMING[@]}" --progress none 2> hbad.err
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "line field knots" hbad.err && [ ! -e hbad/report.json ] ||
  die "2 line field knots: rc $rc, $(cat hbad.err)"

# average --lines: the same per-line model applied again (what another
# detector of the same scan gets) reproduces the corrected average.
"$ENGINE" average s.tif --lines one/lines.csv "${TIMING[@]}" --out relines --progress none
# ... and leaves out what the run left out (frame 4: no registered band in ex1/lines.csv).
"$ENGINE" average s.tif --lines ex1/lines.csv "${TIMING[@]}" --out relines_ex --progress none
python3 - <<'PY' || die "average --lines differs from the corrected average"
import struct
def read_tiff_f32(path):  # the engine's own uncompressed float32 writer: one image, one strip per row or block
    b = open(path, "rb").read()
    e = "<" if b[:2] == b"II" else ">"
    ifd = struct.unpack(e + "I", b[4:8])[0]
    n = struct.unpack(e + "H", b[ifd:ifd + 2])[0]
    tags = {}
    for i in range(n):
        tag, typ, cnt, val = struct.unpack(e + "HHII", b[ifd + 2 + 12 * i: ifd + 14 + 12 * i])
        if typ == 3 and cnt == 1: val &= 0xFFFF if e == "<" else val >> 16
        tags[tag] = (typ, cnt, val)
    w, h = tags[256][2], tags[257][2]
    typ, cnt, off = tags[273]
    offs = [off] if cnt == 1 else list(struct.unpack(e + ("I" if typ == 4 else "H") * cnt, b[off: off + cnt * (4 if typ == 4 else 2)]))
    data = b"".join(b[o:] for o in offs[:1])[: 4 * w * h] if cnt == 1 else None
    if data is None:
        per = (w * h) // cnt
        data = b"".join(b[o: o + 4 * per] for o in offs)
    return w, h, struct.unpack(e + "f" * (w * h), data[: 4 * w * h])
for run, again in (("one", "relines"), ("ex1", "relines_ex"), ("h1", "hre")):
    wa, ha, a = read_tiff_f32(f"{run}/average.tif")
    wb, hb, b = read_tiff_f32(f"{again}/average.tif")
    assert (wa, ha) == (wb, hb), f"{run}: sizes {wa}x{ha} vs {wb}x{hb}"
    scale = max(abs(v) for v in a)
    diff = sum(abs(x - y) for x, y in zip(a, b)) / len(a)
    print(f"average --lines vs register ({run}): mean |difference| {diff:.5f} (peak {scale:.2f})")
    assert diff < 0.01 * scale
_, _, c = read_tiff_f32("relines_ex/coverage.tif")
assert max(c) == 11, f"coverage {max(c)}: the left-out frame was averaged"
PY
set +e
"$ENGINE" average s.tif --lines one/lines.csv --out wrongtiming --progress none 2> wrong.err; rc=$?
set -e
[ "$rc" = 2 ] && grep -q "scan timing\|scan settings" wrong.err || die "lines.csv with other timing: rc $rc, $(cat wrong.err)"

# A series without timing: defaults and a warning naming them.
"$ENGINE" register s.tif --out nodwell --scan-distortion --progress plain 2> nodwell.err >/dev/null
grep -q "no dwell time given" nodwell.err || die "no warning about the missing dwell time"

# Bad settings: one line naming the setting, exit 2, nothing written.
set +e
"$ENGINE" register s.tif --out bad1 --scan-distortion --band-lines 200 --progress none 2> bad1.err; rc1=$?
"$ENGINE" register s.tif --out bad2 --scan-distortion --line-flyback -1 --progress none 2> bad2.err; rc2=$?
set -e
[ "$rc1" = 2 ] && grep -q "band lines" bad1.err || die "bands larger than a frame: rc $rc1, $(cat bad1.err)"
[ "$rc2" = 2 ] && grep -q "line-flyback\|line_flyback" bad2.err || die "negative fly-back: rc $rc2, $(cat bad2.err)"
for d in bad1 bad2; do [ ! -e "$d/report.json" ] && [ ! -e "$d/average.tif" ] || die "$d: output written"; done
echo "ok: scan distortion"
