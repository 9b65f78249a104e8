#!/usr/bin/env bash
# Scan rotations from the file: a Velox EMD series whose frames' metadata
# record their ScanRotation (an orthogonal pair cycle on a base rotation of
# the session) is registered as if --scan-rotation 0,90 had been given: the
# run says so in one line, report.json's job carries it, and the drift is
# the one of the explicit run. A frame of unknown direction among known ones
# is refused in one line naming the frame, exit 2, nothing written; frames
# 45° apart are taken from the file and registered like a given 0,45.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
"$BIN/velox_scanned_series" pairs.emd --frames 6 --size 96 --scan-rotation 0,90 >/dev/null
"$BIN/velox_scanned_series" unknown.emd --frames 6 --size 96 --scan-rotation 0,90 --unknown-rotation 3 >/dev/null
"$BIN/velox_scanned_series" oblique.emd --frames 4 --size 96 --scan-rotation 0,45 >/dev/null

"$ENGINE" register pairs.emd --out from_file --threads 2 --auto-scan-distortion off --progress plain >from_file.log 2>&1 ||
  { cat from_file.log; die "register on the file's rotations failed"; }
grep -q "scan rotations from the file's Velox Scan metadata: 0,90 deg" from_file.log ||
  { cat from_file.log; die "the run did not say it took the file's rotations"; }
"$ENGINE" register pairs.emd --out given --threads 2 --auto-scan-distortion off --scan-rotation 0,90 --progress none
python3 - <<'PY' || die "the file's rotations did not give the explicit run's job and drift"
import csv, json
r = json.load(open("from_file/report.json"))
assert r["job"]["scan"]["rotation"] == [0, 90], r["job"]["scan"]
a = list(csv.DictReader(open("from_file/drift.csv")))
b = list(csv.DictReader(open("given/drift.csv")))
assert len(a) == 6 and a == b, (a[:2], b[:2])
PY
# A given scan.rotation wins over the file's: told every frame is scanned as
# frame 0, the run registers the turned frames as they are recorded (and
# fails on them: they show the specimen turned by 90 degrees).
"$ENGINE" register pairs.emd --out own --threads 2 --auto-scan-distortion off --scan-rotation 0 --progress plain >own.log 2>&1 || true
! grep -q "scan rotations from the file" own.log || die "the file's rotations overrode the given one"
grep -q "registration failed" own.log || { cat own.log; die "the given rotation 0 was not the one run"; }

"$ENGINE" register oblique.emd --out oblique --threads 2 --auto-scan-distortion off --progress plain >oblique.log 2>&1 ||
  { cat oblique.log; die "register on the file's rotations 0,45 failed"; }
grep -q "scan rotations from the file's Velox Scan metadata: 0,45 deg" oblique.log ||
  { cat oblique.log; die "the run did not say it took the file's rotations 0,45"; }
"$ENGINE" register oblique.emd --out oblique_given --threads 2 --auto-scan-distortion off --scan-rotation 0,45 \
  --progress none
cmp -s oblique/drift.csv oblique_given/drift.csv || die "the file's 0,45 and the given 0,45 register differently"
echo "ok: the file's rotations 0,45 taken: $(grep -o 'scan rotations from the file.*deg' oblique.log)"

for case in "unknown:frame 3: its scan rotation is unknown"; do
  name=${case%%:*} want=${case#*:}
  rc=0
  "$ENGINE" register "$name.emd" --out "out_$name" --threads 2 --progress none 2>"$name.err" || rc=$?
  [ "$rc" -eq 2 ] || die "$name: rc $rc, expected 2"
  [ "$(wc -l <"$name.err")" -eq 1 ] || { cat "$name.err"; die "$name: more than one line"; }
  grep -q "$name.emd: $want" "$name.err" || { cat "$name.err"; die "$name: the error does not name the frame"; }
  [ ! -e "out_$name/drift.csv" ] && [ ! -e "out_$name/average.tif" ] || die "$name: outputs written"
done
echo "PASS"
