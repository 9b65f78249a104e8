#!/usr/bin/env bash
# A registration on 4 ranks x 8 threads (32 workers on this machine's few
# cores: oversubscribed, every wait sleeping) gives the drift of the
# single-process run to 1e-4 px (issue 34's target), with work stealing and
# each global algorithm, and on the real ABF series when the sample data is
# there (5 frames over 32 workers: most threads and ranks get nothing). The
# scan brackets otherwise than the single process, so every frame's
# refinement starts from another guess; its result no longer depends on the
# guess (faded overlap weights, settling on the step's fixed point at the
# finest level): measured 2.4e-5 to 4.0e-5 px here, 0.9e-3 to 2.3e-3 px
# before that change. It prints the deviation of every run.
set -euo pipefail
. "$(dirname "$0")/common.sh"
export OMP_WAIT_POLICY=passive
cd "$WORK"
"$ENGINE" synth --frames 72 --size 128x128 --period 9 --dose 6 --drift-linear 0.3,0.2 --seed 34 \
  --out s.tif --progress none
"$ENGINE" register s.tif --out serial --progress none

check_run() {  # series serial-folder tag [extra flags]
  local series=$1 serial=$2 tag=$3; shift 3
  local out="over_${tag}"
  "${MPIRUN[@]}" -np 4 "$ENGINE" register "$series" --out "$out" --threads 8 --progress none "$@"
  local dev; dev=$(max_drift_deviation "$serial/drift.csv" "$out/drift.csv")
  echo "4 ranks x 8 threads, $tag: max deviation from the single process $dev px"
  awk -v d="$dev" 'BEGIN { exit !(d <= 1e-4) }' || die "$tag: deviation $dev px > 1e-4"
  [ "$(wc -l < "$out/drift.csv")" -eq "$(wc -l < "$serial/drift.csv")" ] || die "$tag: drift.csv rows"
}
check_run s.tif serial dissemination --scan-algorithm dissemination
check_run s.tif serial mpi-scan --scan-algorithm mpi-scan
check_run s.tif serial blelloch --scan-algorithm blelloch
check_run s.tif serial ladner-fischer --scan-algorithm ladner-fischer

if [ -e "$SAMPLE_DATA/stem_abf_series.tif" ]; then
  "$ENGINE" register "$SAMPLE_DATA/stem_abf_series.tif" --out real_serial --progress none
  check_run "$SAMPLE_DATA/stem_abf_series.tif" real_serial real-abf
else
  echo "sample data absent: $SAMPLE_DATA/stem_abf_series.tif (the real-series part is left out;" \
    "set DRIFTSCAN_SAMPLE_DATA to run it)"
fi
echo "oversubscribed register: every run within 1e-4 px of the single process"
