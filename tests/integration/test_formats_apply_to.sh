#!/usr/bin/env bash
# A multi-signal microscope file end to end: a DM4 holding three signals of
# the same drifting scan (HAADF, ABF = 1000 - HAADF, "EDX Fe" = 2 HAADF),
# written from a synthetic series. `info` lists them; `register --signal
# HAADF --apply-to ...` (1 and 2 ranks) finds the same drift as registering
# the TIFF itself and writes one average per other signal with that drift
# (checked against the HAADF average through the known relation); `convert`
# writes a calibrated TIFF; bad signal names are refused with exit 2.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
TOOL="$TESTS_DIR/formats_tool.py"
"$ENGINE" synth --frames 16 --size 96x96 --period 9 --dose 6 --drift-linear 0.6,0.3 --seed 3 --out s.tif --progress none
python3 "$TOOL" dm4 s.tif 16 s.dm4

"$ENGINE" info s.dm4 > info.txt
cat info.txt
grep -q "3 signals (DM4)" info.txt || die "info: three signals expected"
grep -q "EDX Fe .* 16 frames .* 96 x 96 .*float32 .*0.05 nm/pixel" info.txt || die "info: EDX Fe line"
"$ENGINE" info --json s.dm4 | python3 -c 'import json,sys; s=json.load(sys.stdin)["signals"]; assert [x["name"] for x in s]==["HAADF","ABF","EDX Fe"], s'

"$ENGINE" register s.tif --out r0 --progress none
"$ENGINE" register s.dm4 --signal HAADF --apply-to all --out r1 --progress none
"${MPIRUN[@]}" -np 2 "$ENGINE" register s.dm4 --signal HAADF --apply-to "ABF" --threads 1 --out r2 --progress none
for f in average.tif coverage.tif average_ABF.tif average_EDX_Fe.tif coverage_ABF.tif; do
  [ -s "r1/$f" ] || die "r1/$f missing"
done
[ -s r2/average_ABF.tif ] && [ ! -e r2/average_EDX_Fe.tif ] || die "r2: only ABF was asked for"
! ls r1 r2 | grep -q tmp || die "temporary file left"

# The same pixels give the same drift as the TIFF.
python3 - <<'PY' || die "drift from the DM4 differs from the TIFF's"
import csv
def rows(p): return [(float(r["dx"]), float(r["dy"])) for r in csv.DictReader(open(p))]
a, b = rows("r0/drift.csv"), rows("r1/drift.csv")
assert len(a) == 16 and len(b) == 16
assert max(abs(x - y) for p, q in zip(a, b) for x, y in zip(p, q)) < 1e-4, (a, b)
PY
# The other signals averaged with that drift: the relation between the signals holds in the averages.
abf=$(python3 "$TOOL" compare r1/average.tif r1/average_ABF.tif r1/coverage.tif -1 1000)
fe=$(python3 "$TOOL" compare r1/average.tif r1/average_EDX_Fe.tif r1/coverage.tif 2 0)
abf2=$(python3 "$TOOL" compare r2/average.tif r2/average_ABF.tif r2/coverage.tif -1 1000)
echo "max deviation: ABF $abf, EDX Fe $fe, ABF (2 ranks) $abf2"
python3 -c "import sys; sys.exit(0 if max($abf, $fe, $abf2) < 0.05 else 1)" || die "apply-to averages do not follow the registered one"

# average --drift --signal afterwards gives the same ABF average.
"$ENGINE" average s.dm4 --signal ABF --drift r1/drift.csv --out a1 --progress none
same=$(python3 "$TOOL" compare r1/average_ABF.tif a1/average.tif r1/coverage.tif 1 0)
python3 -c "import sys; sys.exit(0 if $same < 1e-3 else 1)" || die "average --signal ABF differs from --apply-to ($same)"

# convert: a calibrated TIFF stack of one signal
"$ENGINE" convert s.dm4 --signal "EDX Fe" --out fe.tif --progress none
"$ENGINE" info fe.tif | grep -q "16 frames .* 96 x 96 .*0.05 nm/pixel" || die "convert: $("$ENGINE" info fe.tif)"

# bad names: exit 2, one line naming the file, nothing written
set +e
"$ENGINE" register s.dm4 --signal HAADF --apply-to ABF,nope --out bad1 --progress none 2> bad1.err; rc1=$?
"$ENGINE" register s.dm4 --signal nope --out bad2 --progress none 2> bad2.err; rc2=$?
"$ENGINE" convert s.dm4 --signal nope --out bad3.tif --progress none 2> bad3.err; rc3=$?
"$ENGINE" register s.dm4 --signal ABF --apply-to ABF --out bad4 --progress none 2> bad4.err; rc4=$?
set -e
for i in 1 2 3 4; do
  rc=$(eval echo \$rc$i)
  [ "$rc" -eq 2 ] || die "bad$i: exit $rc, $(cat bad$i.err)"
  grep -q "s.dm4" bad$i.err || die "bad$i: message does not name the file: $(cat bad$i.err)"
done
grep -q "no signal 'nope' (the file holds 'HAADF', 'ABF', 'EDX Fe')" bad1.err || die "bad1: $(cat bad1.err)"
[ ! -e bad1/drift.csv ] && [ ! -e bad3.tif ] || die "output written for a refused signal"
echo "formats apply-to: ok"
