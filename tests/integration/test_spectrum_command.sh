#!/usr/bin/env bash
# `mpirun -np 2 driftscan-engine spectrum` on a synthetic square lattice:
# the three spectra are written (2-D of a frame, 2-D of the average, the 3-D
# volume: one float32 page of height x width per frame) and listed in the
# result event; --spectrum-max-frames bins the time axis; a missing input or
# a drift table of the wrong length is a one-line error and a non-zero exit;
# SIGTERM to one rank stops the run (exit 4) and leaves no volume.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
"$ENGINE" synth --frames 13 --size 64x64 --period 8 --lattice square --grain-boundary off --dose 20 --seed 3 \
  --out s.tif --progress none

"${MPIRUN[@]}" -np 2 "$ENGINE" spectrum s.tif --drift s_truth.csv --frame 2 --out spec --progress json > spec.events
for f in spectrum.tif spectrum_average.tif spectrum3d.tif; do [ -s "spec/$f" ] || die "spec/$f missing"; done
! ls spec | grep -q tmp || die "temporary file left"
grep '"event":"result"' spec.events | grep '"spectrum3d":' | grep '"spectrum_average":' | grep -q '"spectrum":' \
  || die "result event does not list the three files: $(grep result spec.events)"
grep -q '"phase":"read"' spec.events && grep -q '"phase":"transform"' spec.events && grep -q '"phase":"write"' spec.events \
  || die "phases read/transform/write not reported"
grep -q '3-D spectrum of the registered stack: 13 planes' spec.events || die "no summary line"

# The volume holds 13 float32 pages of 64x64 (plus headers); its contents
# (lattice peaks in the kt = 0 plane, every voxel against serial FFTW) are
# checked in C++ by test_stack_spectrum (numpy/tifffile are not installed by
# scripts/install-deps).
grep -q '13 planes (1 frame each) x 64 x 64' spec.events || die "volume size: $(grep '3-D spectrum' spec.events)"
bytes=$(stat -c %s spec/spectrum3d.tif)
[ "$bytes" -ge $((13 * 64 * 64 * 4)) ] && [ "$bytes" -lt $((13 * 64 * 64 * 4 + 65536)) ] || die "spectrum3d.tif is $bytes bytes"

# bounded time axis: 13 frames, at most 5 planes -> bins of 3, 4 planes, 1 frame left out
"$ENGINE" spectrum s.tif --spectrum-max-frames 5 --out binned --progress json > binned.events
grep -q '4 planes (3 frames each)' binned.events || die "binning: $(grep message binned.events | head -3)"
grep -q 'the last 1 frames fill no whole bin' binned.events || die "binning: no warning for the left-out frame"

# bad input: one line naming the file, exit 2, no results
set +e
"$ENGINE" spectrum nope.tif --out bad1 --progress none 2> bad1.err; rc1=$?
head -5 s_truth.csv > short.csv
"$ENGINE" spectrum s.tif --drift short.csv --out bad2 --progress none 2> bad2.err; rc2=$?
"${MPIRUN[@]}" -np 2 "$ENGINE" spectrum s.tif --drift short.csv --out bad3 --progress none > /dev/null 2> bad3.err; rc3=$?
set -e
[ $rc1 -eq 2 ] && [ "$(wc -l < bad1.err)" -eq 1 ] && grep -q "nope.tif" bad1.err || die "missing input: rc $rc1, $(cat bad1.err)"
[ $rc2 -eq 2 ] && [ "$(wc -l < bad2.err)" -eq 1 ] && grep -q "short.csv: 4 frames, but s.tif has 13" bad2.err \
  || die "short drift table: rc $rc2, $(cat bad2.err)"
[ $rc3 -ne 0 ] && grep -q "short.csv: 4 frames" bad3.err || die "short drift table on 2 ranks: rc $rc3, $(cat bad3.err)"
[ ! -e bad2/spectrum3d.tif ] && [ ! -e bad3/spectrum3d.tif ] || die "output left after a refused table"
# SIGTERM to rank 1 while the ranks read their slabs: every rank stops
# (exit 4, a cancelled event) and no volume, not even a temporary one, is left.
"$ENGINE" synth --frames 200 --size 256x256 --period 9 --dose 6 --seed 4 --out big.tif --progress none
"${MPIRUN[@]}" -np 2 "$ENGINE" spectrum big.tif --drift big_truth.csv --out cancel --progress json > c.events 2> c.err &
P=$!
for i in $(seq 500); do grep -q '"phase":"read"' c.events 2>/dev/null && break; sleep 0.02; done
R1=$(pgrep -P $P | tail -1)
kill -TERM "$R1"; t0=$(date +%s.%N); set +e; wait $P; rc=$?; set -e; t1=$(date +%s.%N)
dt=$(python3 -c "print(round($t1 - $t0, 2))")
echo "  SIGTERM to rank 1 of 2 while reading -> rc=$rc in ${dt}s"
[ $rc -eq 4 ] || die "cancel: rc $rc, $(grep -v '^-' c.err | head -3)"
python3 -c "import sys; sys.exit(0 if $dt <= 3.0 else 1)" || die "cancel: took ${dt}s"
tail -1 c.events | grep -q '"event":"cancelled"' || die "cancel: no cancelled event"
[ -z "$(ls -A cancel 2>/dev/null)" ] || die "cancel: left $(ls -A cancel)"
echo "spectrum command: ok"
