#!/usr/bin/env bash
# `driftscan-engine average` re-averages a series with an earlier run's
# drift.csv (or a synthetic series' truth) without registering again, and
# refuses a drift table that does not fit the series.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
"$ENGINE" synth --frames 24 --size 96x96 --period 9 --dose 6 --drift-linear 0.4,0.2 --seed 5 --out s.tif --progress none
"$ENGINE" register s.tif --out reg --progress none

# median with the registration's drift, and mean with the known truth
"$ENGINE" average s.tif --drift reg/drift.csv --method median --out med --progress none
"$ENGINE" average s.tif --drift s_truth.csv --out truth --progress json > truth.events
for d in med truth; do
  [ -s "$d/average.tif" ] && [ -s "$d/coverage.tif" ] || die "$d: average/coverage missing"
  [ "$(wc -l < "$d/quality.csv")" -eq 25 ] || die "$d: quality.csv should have 24 frames"
  ! ls "$d" | grep -q tmp || die "$d: temporary file left"
done
grep -q '"event":"result"' truth.events || die "no result event"
# every frame overlaps and registers well: all used, quality high
awk -F, 'NR>1 && ($3 != 1 || $2 < 0.5) { bad++ } END { exit bad > 0 }' truth/quality.csv \
  || die "frames rejected when averaging with the true drift"

# --print-job shows the field, and bad tables are refused with exit 2 naming the file
# (with absolute paths: a printed job runs the same from any folder)
"$ENGINE" average s.tif --drift reg/drift.csv --out x --print-job | grep -q "\"drift\": \"$WORK/reg/drift.csv\"" || die "--print-job"
head -10 s_truth.csv > short.csv
set +e
"$ENGINE" average s.tif --drift short.csv --out bad1 --progress none 2> bad1.err; rc1=$?
"$ENGINE" average s.tif --out bad2 --progress none 2> bad2.err; rc2=$?
printf 'frame,dx,dy\n0,0,0\n1,abc,0\n' > garbled.csv
"$ENGINE" average s.tif --drift garbled.csv --out bad3 --progress none 2> bad3.err; rc3=$?
set -e
[ $rc1 -eq 2 ] && grep -q "short.csv" bad1.err || die "short table: rc $rc1, $(cat bad1.err)"
[ $rc2 -eq 2 ] && grep -q "averaging.drift" bad2.err || die "no table: rc $rc2, $(cat bad2.err)"
[ $rc3 -eq 2 ] && grep -q "garbled.csv:3" bad3.err || die "garbled table: rc $rc3, $(cat bad3.err)"
[ ! -e bad1/average.tif ] && [ ! -e bad3/average.tif ] || die "output left after a refused table"
echo "average command: ok"
