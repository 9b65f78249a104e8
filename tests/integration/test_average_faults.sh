#!/usr/bin/env bash
# Faults while averaging over ranks. A frame that only one rank reads is
# undecodable (a corrupt Deflate strip in the last frame; every page's
# directory is intact, so all ranks open the series): the job ends on every
# rank with one error event naming the frame, the rank and its host, a
# non-zero exit, and no average. Then the results folder on a full file
# system (a 48-KB tmpfs; needs root and mount, else that part is skipped
# and said so): the preflight check refuses the job before any frame is read
# (exit 2, naming the folder and the space it lacks), and leaves no
# average.tif and no temporary under the folder.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
python3 "$TESTS_DIR/deflate_series.py" bad.tif 12 48 --corrupt 11
python3 "$TESTS_DIR/deflate_series.py" ok.tif 12 128
(echo frame,dx,dy; for k in $(seq 0 11); do echo "$k,0.$k,0"; done) > drift.csv
host=$(hostname)

for np in 2 3; do
  set +e
  "${MPIRUN[@]}" -np $np "$ENGINE" average bad.tif --drift drift.csv --out bad$np --progress json > bad$np.events 2> bad$np.err
  rc=$?
  set -e
  [ $rc -ne 0 ] || die "$np ranks: an unreadable frame was averaged (exit 0)"
  errors=$(grep -c '"event":"error"' bad$np.events || true)
  [ "$errors" -eq 1 ] || die "$np ranks: $errors error events"
  last=$((np - 1))
  grep '"event":"error"' bad$np.events | grep -q "rank $last on $host: bad.tif: frame 11" \
    || die "$np ranks: the error does not name frame 11 and rank $last on $host: $(grep error bad$np.events)"
  [ ! -e bad$np/average.tif ] || die "$np ranks: an average was written"
  echo "ok: $np ranks, unreadable frame 11: $(grep -o '"message":"[^"]*"' bad$np.events)"
done

# The results folder on a full file system.
mkdir full
if ! mount -t tmpfs -o size=48k tmpfs full 2>/dev/null; then
  echo "SKIP (part): cannot mount a small tmpfs here (not root?): the full-disk case was not run"
  exit 0
fi
at_exit 'umount "$WORK/full"'
set +e
"${MPIRUN[@]}" -np 2 "$ENGINE" average ok.tif --drift drift.csv --out full/avg --progress json > full.events 2> full.err
rc=$?
set -e
[ $rc -eq 2 ] || die "full disk: exit $rc (want 2, refused before work): $(cat full.err)"
[ "$(grep -c '"event":"error"' full.events)" -eq 1 ] || die "full disk: not one error event"
grep '"event":"error"' full.events | grep -q "full/avg has .* free" ||
  die "full disk: the error does not name the folder and its free space: $(grep error full.events)"
[ ! -e full/avg/average.tif ] || die "full disk: a partial average.tif is left"
leftover=$(find full -name '.*tmp*' | wc -l)
[ "$leftover" -eq 0 ] || die "full disk: $leftover temporaries left: $(find full)"
echo "ok: full disk: $(grep '"event":"error"' full.events)"
echo "average faults: ok"
